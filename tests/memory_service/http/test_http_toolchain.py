"""Toolchain staleness through HTTP, on the real H200 softmax run (bench/results/h200): it was
measured under triton 3.6.0, torch 2.11.0+cu130 and CUDA 13.0.

The discount is hand-computed: two +1 draft rewards (alpha 0.3) give Q = 0.3, then 0.51, in every
scope of the h200 chain. Under triton 3.7.0 those outcomes are superseded and weigh 0.5 each, so
every scope counts 1 observation: V_global = 0.51 / 3, and each narrower scope
V = (0.51 + 2 V_parent) / 3. Undiscounted, each counts 2: V = (1.02 + 2 V_parent) / 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

RUN = Path(__file__).resolve().parents[3] / "bench" / "results" / "h200" / "softmax.jsonl"
RECORDED = {"triton": "3.6.0", "torch": "2.11.0+cu130", "cuda": "13.0"}
NEWER = {"triton": "3.7.0", "torch": "2.11.0+cu130", "cuda": "13.0"}


def _chain_value(q: float, n: float, scopes: int = 4, kappa: float = 2.0) -> float:
    value = 0.0
    for _ in range(scopes):
        value = (n * q + kappa * value) / (n + kappa)
    return value


@pytest.fixture
def seeded(client):  # type: ignore[no-untyped-def]
    run = json.loads(RUN.read_text().splitlines()[0])
    assert run["context"]["toolchain"]["triton"] == "3.6.0"
    summary = client.post("/v1/trajectories", json={"trajectories": [run]})
    assert summary.status_code == 201, summary.text
    assert summary.json()["lessons_added"] > 1
    return client


def _retrieve(client, toolchain: dict | None = None, values: str = "chain") -> dict:  # type: ignore[no-untyped-def]
    context = {"chip": "h200", **({"toolchain": toolchain} if toolchain else {})}
    body = {"query": "softmax block size", "task": {"op": "softmax"}, "context": context}
    options = {"values": values}
    response = client.post(
        "/v1/retrieve", json={**body, "stage": "draft", "k": 3, "options": options}
    )
    assert response.status_code == 200, response.text
    return response.json()


def _report(client, retrieval: dict, lesson_id: str) -> None:  # type: ignore[no-untyped-def]
    outcome = {"compiled": True, "correct": True, "latency_ms": 1.0}
    body = {"retrieval_id": retrieval["retrieval_id"], "used": [lesson_id], "outcome": outcome}
    assert client.post("/v1/outcomes", json=body).status_code == 200


def _by_id(retrieval: dict) -> dict[str, dict]:
    return {lesson["id"]: lesson for lesson in retrieval["lessons"]}


def test_evidence_is_discounted_and_stale_until_revalidated(seeded, service) -> None:  # type: ignore[no-untyped-def]
    client = seeded
    current = _retrieve(client, RECORDED)
    lesson = current["lessons"][0]
    lid = lesson["id"]
    view = lesson["breakdown"]["toolchain"]
    assert lesson["stale"] is False and view["stale"] is False
    assert view["evidence"] == [
        {
            "versions": RECORDED | {"python": "3.12.3"},
            "n": 0,
            "source": True,
            "status": "current",
            "changed": [],
        }
    ]
    assert _retrieve(client)["lessons"][0]["breakdown"]["toolchain"] is None  # none named

    # A newer Triton supersedes the run the lesson came from: stale, with the versions.
    newer = _by_id(_retrieve(client, NEWER))[lid]
    assert newer["stale"] is True
    assert newer["breakdown"]["toolchain"]["evidence"][0]["changed"] == [
        {"component": "triton", "evidence": "3.6.0", "current": "3.7.0"}
    ]
    # torch is not a compiler: a newer torch alone leaves the lesson current.
    assert _by_id(_retrieve(client, RECORDED | {"torch": "2.12.0"}))[lid]["stale"] is False

    for _ in range(2):
        _report(client, _retrieve(client, RECORDED), lid)
    at_recorded = _by_id(_retrieve(client, RECORDED))[lid]["breakdown"]
    assert at_recorded["value"] == pytest.approx(_chain_value(0.51, 2))
    assert at_recorded["toolchain"]["weights"] == {}
    discounted = _by_id(_retrieve(client, NEWER))[lid]
    tool = discounted["breakdown"]["toolchain"]
    assert tool["weights"] == {s: 0.5 for s in current["scope_chain"]}
    assert discounted["breakdown"]["value"] == pytest.approx(_chain_value(0.51, 1))
    assert tool["undiscounted_value"] == pytest.approx(_chain_value(0.51, 2))
    outcomes = [e for e in tool["evidence"] if not e["source"]]
    assert outcomes == [
        {
            "versions": {"triton": "3.6.0", "torch": "2.11.0+cu130", "cuda": "13.0"},
            "n": 2,
            "source": False,
            "status": "superseded",
            "changed": [{"component": "triton", "evidence": "3.6.0", "current": "3.7.0"}],
        }
    ]
    assert discounted["stale"] is True

    # Tried under 3.7.0 and it works: current again, and listed stale no more.
    stale_before = client.get("/v1/lessons", params={"stale": "true", "toolchain": "triton=3.7"})
    assert stale_before.status_code == 200
    assert lid in [lesson["id"] for lesson in stale_before.json()["data"]]
    _report(client, _retrieve(client, NEWER), lid)
    assert _by_id(_retrieve(client, NEWER))[lid]["stale"] is False
    listed = client.get("/v1/lessons", params={"stale": "true", "toolchain": "triton=3.7"}).json()
    assert listed["toolchain"] == {"triton": "3.7"}
    assert lid not in [lesson["id"] for lesson in listed["data"]]
    assert listed["count"] == stale_before.json()["count"] - 1 == len(listed["data"])
    assert all(lesson["evidence"] for lesson in listed["data"])
    # Without a toolchain, the newest recorded versions are the yardstick: 3.7.0 here.
    newest = client.get("/v1/lessons", params={"stale": "true"}).json()
    assert newest["toolchain"]["triton"] == "3.7.0" and newest["count"] == listed["count"]
    assert (
        client.get("/v1/lessons", params={"stale": "true", "toolchain": "triton=3.6"}).json()[
            "count"
        ]
        == 0
    )

    # values rebuild reproduces the value and the evidence tables.
    before = _tables(service)
    assert client.post("/v1/admin/values/rebuild").status_code == 200
    assert _tables(service) == before


def test_generalised_values_discount_superseded_outcomes(seeded) -> None:  # type: ignore[no-untyped-def]
    """The default (generalised) estimate keeps its terms under a named toolchain, and its own
    outcomes count less there: two outcomes under triton 3.6.0 weigh 2 at 3.6.0 and 2 x 0.5 = 1
    at 3.7.0, against the prior's kappa = 2 (hand-computed from the term shares)."""
    client = seeded
    lid = _retrieve(client, RECORDED, "generalised")["lessons"][0]["id"]
    for _ in range(2):
        _report(client, _retrieve(client, RECORDED, "generalised"), lid)
    at_recorded = _by_id(_retrieve(client, RECORDED, "generalised"))[lid]["breakdown"]
    plain = _by_id(_retrieve(client, None, "generalised"))[lid]["breakdown"]
    newer = _by_id(_retrieve(client, NEWER, "generalised"))[lid]["breakdown"]
    for breakdown in (at_recorded, plain, newer):
        assert any(term.startswith("recorded:") for term in breakdown["value_terms"])
    assert at_recorded["value_terms"] == pytest.approx(plain["value_terms"])
    own = "chip:h200"
    shares = at_recorded["value_terms"]
    assert shares[own] / shares["prior"] == pytest.approx(2 / 2)
    assert newer["value_terms"][own] / newer["value_terms"]["prior"] == pytest.approx(1 / 2)
    assert newer["toolchain"]["undiscounted_value"] == pytest.approx(at_recorded["value"])
    assert newer["value"] != pytest.approx(at_recorded["value"])


def _tables(service) -> tuple[list, list]:  # type: ignore[no-untyped-def]
    from tunemem.memory_service.core.sql.tables import LessonEvidence

    evidence_order = (
        col(LessonEvidence.lesson_id),
        col(LessonEvidence.stage),
        col(LessonEvidence.scope),
        col(LessonEvidence.toolchain),
    )
    with Session(service.engine) as session:
        evidence = [
            (e.lesson_id, e.stage, e.scope, e.toolchain, e.versions, e.n)
            for e in session.exec(select(LessonEvidence).order_by(*evidence_order))
        ]
    return service.value_table(), evidence


def test_bad_toolchains_are_refused(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/v1/lessons", params={"stale": "true", "toolchain": "triton"})
    assert response.status_code == 422 and response.json()["code"] == "invalid_request"
    assert "component=version" in response.json()["message"]
    body = {"query": "x", "context": {"toolchain": {"triton": 3.6}}, "stage": "draft"}
    assert client.post("/v1/retrieve", json=body).status_code == 422


def test_transfer_audit_cut_by_toolchain(client) -> None:  # type: ignore[no-untyped-def]
    """A lesson helps on a100 and h200 under triton 3.6.0, then fails on h200 under 3.7.0.

    Q after +1 is 0.3; after +1 then -1, 0.3 + 0.3 (-1 - 0.3) = -0.09 (alpha 0.3).
    """
    lesson = {
        "kind": "insight",
        "text": "a block of 256 rows per program is fastest for softmax",
        "applicability": {"op": "softmax"},
    }
    lid = client.post("/v1/lessons", json={"lessons": [lesson]}).json()["ids"][0]

    def attempt(chip: str, triton: str, good: bool) -> None:
        context = {"chip": chip, "toolchain": {"triton": triton}}
        body = {"query": "softmax rows", "task": {"op": "softmax"}, "context": context}
        got = client.post("/v1/retrieve", json={**body, "stage": "draft"}).json()
        assert lid in [item["id"] for item in got["lessons"]]
        outcome = {"compiled": True, "correct": good}
        report = {"retrieval_id": got["retrieval_id"], "used": [lid], "outcome": outcome}
        assert client.post("/v1/outcomes", json=report).status_code == 200

    attempt("a100", "3.6.0", True)
    attempt("h200", "3.6.0", True)
    attempt("h200", "3.7.0", False)

    def pair(**params: object) -> dict:
        audit = client.get("/v1/audit/transfer", params={"chips": "a100,h200", **params}).json()
        return next(p for p in audit["pairs"] if p["source"] == "a100")

    assert pair()["common"][0]["target_q"] == pytest.approx(-0.09)
    cut = client.get("/v1/audit/transfer", params={"chips": "a100,h200", "toolchain": "triton=3.6"})
    assert cut.json()["toolchain"] == {"triton": "3.6"}
    assert pair(toolchain="triton=3.6")["common"][0]["target_q"] == pytest.approx(0.3)
    assert pair(toolchain="triton=3.7")["n_common"] == 0  # a100 has no outcome under 3.7
    bad = client.get("/v1/audit/transfer", params={"toolchain": "triton"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_toolchain"
