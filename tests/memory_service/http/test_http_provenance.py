"""Provenance at the API (issue 36): outcomes and uploaded runs say how their numbers were
obtained; bad values are refused with 422 and change nothing; old clients that say nothing are
stored as unstated; a measurement whose runtime names another chip is refused; every door that
shows a lesson shows how its source run was measured."""

from __future__ import annotations

from sqlmodel import select

from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.memory_service.core.sql.tables import Outcome, Trajectory

CONV = SAMPLES_DIR / "kerneltuner" / "convolution"
RETRIEVE = {
    "query": "tile the convolution",
    "task": {"op": "convolution"},
    "context": {"chip": "NVIDIA H100"},
    "stage": "draft",
    "k": 3,
}


def native_run(**provenance: object) -> dict:
    """A SYNTHETIC one-attempt run in tunemem's native format."""
    run = {
        "version": 1,
        "source_format": "native",
        "source": f"test:{sorted(provenance.items())}",
        "task": {"op": "convolution", "kernel": None, "signature": {}, "dtype": None},
        "context": {"chip": "NVIDIA H100", "backend": "cuda"},
        "attempts": [{"index": 0, "params": {"block_size_x": 16}, "latency_ms": 1.5}],
    }
    if provenance:
        run["provenance"] = provenance
    return run


def stored(service, table):
    with service.store.session() as session:
        return list(session.exec(select(table)))


def test_outcome_provenance_is_validated_defaulted_and_stored(client, service) -> None:
    service.ingest(read_any([CONV]))
    retrieved = client.post("/v1/retrieve", json=RETRIEVE).json()
    rid, first = retrieved["retrieval_id"], retrieved["lessons"][0]["id"]
    body = {"compiled": True, "correct": True, "latency_ms": 2.0}
    for bad, code in [
        ({"origin": "guessed"}, "invalid_request"),
        ({"origin": "replayed", "device_reported": "NVIDIA H100"}, "invalid_request"),
        ({"origin": "measured", "device_reported": "AMD Instinct MI250X"}, "device_contradicted"),
        ({"origin": "measured", "extra": 1}, "invalid_request"),
    ]:
        refused = client.post(
            "/v1/outcomes",
            json={"retrieval_id": rid, "used": [first], "outcome": {**body, "provenance": bad}},
        )
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["code"] in (code, "invalid_input", "validation_error"), refused.text
    assert stored(service, Outcome) == []  # nothing of a refused report is kept

    old_client = client.post("/v1/outcomes", json={"retrieval_id": rid, "outcome": body})
    assert old_client.status_code == 200, old_client.text
    measured = {"origin": "measured", "device_reported": "NVIDIA H100 80GB HBM3"}
    ok = client.post(
        "/v1/outcomes",
        json={"retrieval_id": rid, "used": [first], "outcome": {**body, "provenance": measured}},
    )
    assert ok.status_code == 200, ok.text
    rows = sorted(stored(service, Outcome), key=lambda o: o.id)
    assert [(o.origin, o.device_reported) for o in rows] == [
        ("unstated", None),
        ("measured", "NVIDIA H100 80GB HBM3"),
    ]
    history = client.get(f"/v1/lessons/{first}/history").json()
    assert {o["origin"] for o in history["outcomes"]} == {"unstated", "measured"}
    page = client.get(f"/ui/lessons/{first}").text
    assert 'id="source-run"' in page and "recorded, complete" in page
    assert "measured on NVIDIA H100 80GB HBM3" in page


def test_uploaded_run_provenance_is_validated_and_defaulted(client, service) -> None:
    for bad in (
        {"origin": "measured", "coverage": "most"},
        {"origin": "simulated", "device_reported": "NVIDIA H100"},
        {"origin": "measured", "device_reported": "AMD Radeon PRO W6600"},
        {"origin": "measured", "colour": "red"},
    ):
        refused = client.post("/v1/trajectories", json={"trajectories": [native_run(**bad)]})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["code"] == "invalid_trajectory"
    assert stored(service, Trajectory) == []
    good = {"origin": "measured", "coverage": "partial", "device_reported": "NVIDIA H100 80GB HBM3"}
    for run in (native_run(), native_run(**good)):
        assert client.post("/v1/trajectories", json={"trajectories": [run]}).status_code == 201
    rows = {t.origin: t for t in stored(service, Trajectory)}
    assert rows["unstated"].coverage == "unstated"
    assert rows["measured"].device_reported == "NVIDIA H100 80GB HBM3"


def test_retrieve_and_suggest_show_how_the_source_run_was_measured(client, service) -> None:
    service.ingest(read_any([CONV]))
    lessons = client.post("/v1/retrieve", json=RETRIEVE).json()["lessons"]
    runs = [lesson["breakdown"]["source_run"] for lesson in lessons]
    assert runs and all(run is not None for run in runs)
    assert {(run["origin"], run["coverage"]) for run in runs} == {("recorded", "complete")}
    space = {"params": {"block_size_x": [16, 32, 48, 64, 80, 96, 112, 128]}}
    answer = client.post(
        "/v1/suggest",
        json={"task": {"op": "convolution"}, "context": {"chip": "NVIDIA H100"}, "space": space},
    )
    assert answer.status_code == 200, answer.text
    cited = [lesson for s in answer.json()["suggestions"] for lesson in s["lessons"]]
    assert all(lesson["source_run"]["origin"] == "recorded" for lesson in cited)
