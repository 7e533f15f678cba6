"""Claims against outcomes in the service: a recorded space whose timings fail to reproduce in
reported outcomes loses weight in every lesson it informs, the breakdown says by how much, and
`values rebuild` reproduces the live values (SYNTHETIC trajectories, invented times)."""

from __future__ import annotations

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.schemas.audit import TransferQuery
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

KEYS = ["bx"]
TRUE_A4000 = {16: 4.0, 32: 2.0, 64: 1.0, 128: 1.5}  # what running on an a4000 measures
CLAIMED_A4000 = {16: 1.0, 32: 0.5, 64: 2.0, 128: 3.0}  # a run recorded under the a4000's name


def _trajectory(chip: str, times: dict[int, float], source: str) -> TrajectoryRecord:
    return TrajectoryRecord(
        source_format="native",
        source=source,
        task=TaskSpec("synthgemm", signature={"problem_size": [256], "tune_params_keys": KEYS}),
        context=ContextSpec(chip, "cuda"),
        attempts=[
            AttemptRecord(i, {"bx": bx}, latency_ms=t) for i, (bx, t) in enumerate(times.items())
        ],
        synthetic=True,
    )


def _retrieve(service, claim_power: float):
    return service.retrieve(
        RetrieveRequest(
            query="tune synthgemm",
            task={
                "op": "synthgemm",
                "signature": {"problem_size": [256], "tune_params_keys": KEYS},
            },
            context={"chip": "a4000"},
            stage="refine",
            k=30,
            options={"values": "generalised", "k_recall": 60, "claim_power": claim_power},
        )
    )


def _values(response) -> dict[str, tuple[float, dict[str, float], dict[str, float]]]:
    return {
        x.id: (x.breakdown.value, x.breakdown.value_terms, x.breakdown.claim_trust)
        for x in response.lessons
    }


def test_contradicted_claims_lose_weight_and_rebuild_reproduces_it(make_service) -> None:
    service = make_service(index="memory")
    service.ingest(
        [
            _trajectory("a4000", CLAIMED_A4000, "synthetic/mislabelled"),
            _trajectory("a100", {16: 2.0, 32: 1.5, 64: 0.5, 128: 0.8}, "synthetic/a100"),
        ]
    )
    first = _retrieve(service, 2.0)
    exemplars = {x.hint["config"]["bx"]: x for x in first.lessons if (x.hint or {}).get("config")}
    assert all(not x.breakdown.claim_trust for x in first.lessons)  # nothing re-measured yet
    # The claimed-fast configurations run at the a4000's true times: 4x and 4x slower.
    for bx in (32, 16):
        retrieval = _retrieve(service, 2.0)
        service.report(
            ReportRequest(
                retrieval_id=retrieval.retrieval_id,
                used=[exemplars[bx].id],
                outcome=OutcomeIn(compiled=True, correct=True, latency_ms=TRUE_A4000[bx]),
            )
        )
    live = _values(_retrieve(service, 2.0))
    # ratios 0.5/2 and 1/4: trust ((0.25 + 0.25 + 2) / (2 + 2)) ** 2 for every lesson's
    # recorded term on the a4000, whichever run it was distilled from
    expected = ((0.5 + 2.0) / 4.0) ** 2
    recorded = [trust for _, _, trust in live.values() if "recorded:chip:a4000" in trust]
    assert recorded and all(abs(t["recorded:chip:a4000"] - expected) < 1e-9 for t in recorded)
    assert all("recorded:chip:a100" not in trust for _, _, trust in live.values())
    # without the term (power 0) the same log gives the undiscounted values
    plain = _values(_retrieve(service, 0.0))
    lid = exemplars[32].id
    assert plain[lid][1]["recorded:chip:a4000"] > live[lid][1]["recorded:chip:a4000"]
    assert plain[lid][0] > live[lid][0]  # its claimed reach 1.0 on the a4000 counts less
    assert service.rebuild_values() == 2
    assert _values(_retrieve(service, 2.0)) == live


def test_reproduced_claims_keep_full_trust(make_service) -> None:
    service = make_service(index="memory")
    service.ingest([_trajectory("a4000", TRUE_A4000, "synthetic/a4000")])
    exemplar = next(x for x in _retrieve(service, 2.0).lessons if (x.hint or {}).get("config"))
    retrieval = _retrieve(service, 2.0)
    service.report(
        ReportRequest(
            retrieval_id=retrieval.retrieval_id,
            used=[exemplar.id],
            outcome=OutcomeIn(
                compiled=True,
                correct=True,
                latency_ms=TRUE_A4000[exemplar.hint["config"]["bx"]] * 0.9,
            ),
        )
    )
    assert all(not x.breakdown.claim_trust for x in _retrieve(service, 2.0).lessons)


def _contradicted(service) -> dict[int, str]:
    """The mislabelled run ingested, two of its claims re-measured at the a4000's true times."""
    service.ingest(
        [
            _trajectory("a4000", CLAIMED_A4000, "synthetic/mislabelled"),
            _trajectory("a100", {16: 2.0, 32: 1.5, 64: 0.5, 128: 0.8}, "synthetic/a100"),
        ]
    )
    lessons = _retrieve(service, 2.0).lessons
    exemplars = {x.hint["config"]["bx"]: x.id for x in lessons if (x.hint or {}).get("config")}
    for bx in (32, 16):
        service.report(
            ReportRequest(
                retrieval_id=_retrieve(service, 2.0).retrieval_id,
                used=[exemplars[bx]],
                outcome=OutcomeIn(compiled=True, correct=True, latency_ms=TRUE_A4000[bx]),
            )
        )
    return exemplars


def test_the_analyst_sees_which_runs_claims_failed(make_service, tmp_path) -> None:
    from typer.testing import CliRunner

    from tunemem.cli.app import app
    from tunemem.memory_service.core.schemas.lessons import LessonFilter
    from tunemem.memory_service.http.audit_html import render_report

    service = make_service(index="memory")
    _contradicted(service)
    (claims,) = service.audit_transfer().claims  # only the a4000 run was re-measured
    assert (claims.chip, claims.op, claims.n) == ("a4000", "synthgemm", 2)
    assert claims.source == "synthetic/mislabelled"
    # ratios 0.5/2 and 1/4; claimed reach 0.5/0.5 and 0.5/1; measured 0.5/2 and 0.5/4
    assert abs(claims.reproduced - 0.25) < 1e-9
    assert abs(claims.claimed_reach - 0.75) < 1e-9
    assert abs(claims.measured_reach - (0.25 + 0.125) / 2) < 1e-9
    assert service.audit_transfer(TransferQuery(chips="a100")).claims == []
    found = service.list_lessons(LessonFilter(sort="unreproduced"))
    assert found.count > 0
    assert all(x.claims == claims for x in found.data)
    assert all(x.provenance["source"] == "synthetic/mislabelled" for x in found.data)
    assert service.list_lessons(LessonFilter(sort="unreproduced", chip="a100")).count == 0
    assert "Claims against outcomes" in render_report(service.audit_transfer())
    service.close()

    data = ["--data-dir", str(tmp_path / "store")]
    top = CliRunner().invoke(app, ["lessons", "top", "--unreproduced", "--n", "3", *data])
    assert top.exit_code == 0, top.output
    assert "failed to reproduce" in top.output and "0.25" in top.output
    audit = CliRunner().invoke(app, ["audit", "transfer", *data])
    assert audit.exit_code == 0 and "synthetic/mislabelled" in audit.output


def test_claims_over_http_and_in_the_ui(make_service) -> None:
    from fastapi.testclient import TestClient

    from tunemem.memory_service.http.app import create_app

    service = make_service(index="memory")
    _contradicted(service)
    with TestClient(create_app(service)) as client:
        listed = client.get("/v1/lessons", params={"sort": "unreproduced", "limit": 2}).json()
        assert listed["count"] > 0 and len(listed["data"]) == 2
        assert listed["data"][0]["claims"]["chip"] == "a4000"
        audit = client.get("/v1/audit/transfer").json()
        assert [c["source"] for c in audit["claims"]] == ["synthetic/mislabelled"]
        page = client.get("/ui/transfer").text
        assert 'id="claims"' in page and "synthetic/mislabelled" in page
        bad = client.get("/v1/lessons", params={"sort": "unreproducible"})
        assert bad.status_code == 422 and "code" in bad.json()
