"""A replay re-measures nothing (issue 36): outcomes reported as replayed or simulated neither
confirm nor contradict a recorded run's claims; measured ones do (SYNTHETIC runs)."""

from __future__ import annotations

from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

from .test_core_claims import CLAIMED_A4000, TRUE_A4000, _retrieve, _trajectory


def _report(service, origin: str) -> None:
    service.ingest([_trajectory("a4000", CLAIMED_A4000, "synthetic/mislabelled")])
    lessons = _retrieve(service, 2.0).lessons
    exemplars = {x.hint["config"]["bx"]: x.id for x in lessons if (x.hint or {}).get("config")}
    for bx in (32, 16):
        service.report(
            ReportRequest(
                retrieval_id=_retrieve(service, 2.0).retrieval_id,
                used=[exemplars[bx]],
                outcome=OutcomeIn(
                    compiled=True,
                    correct=True,
                    latency_ms=TRUE_A4000[bx],
                    provenance={"origin": origin},
                ),
            )
        )


def test_replayed_and_simulated_outcomes_are_no_remeasurement(make_service, tmp_path) -> None:
    for origin in ("replayed", "simulated"):
        service = make_service(tmp_path / origin, index="memory")
        _report(service, origin)
        assert service.audit_transfer().claims == []
        assert all(not x.breakdown.claim_trust for x in _retrieve(service, 2.0).lessons)
    measured = make_service(tmp_path / "measured", index="memory")
    _report(measured, "measured")
    assert [c.n for c in measured.audit_transfer().claims] == [2]
