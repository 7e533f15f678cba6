"""The outcome-log projections are one list (`values.projections`): the report path applies
every one to a new outcome, and `values rebuild` resets them and replays the log through the
same list, so the derived tables come out the same."""

from __future__ import annotations

from typing import Any

from tunemem.memory_service.core.learning import outcome_write
from tunemem.memory_service.core.maintenance import part as maintenance
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest
from tunemem.memory_service.core.values import projections as projections_module


class Recording:
    """A projection that remembers what it was given."""

    def __init__(self) -> None:
        self.resets: list[str | None] = []
        self.applied: list[tuple[str, list[str], float, Any]] = []

    def reset(self, session, tenant) -> None:  # type: ignore[no-untyped-def]
        self.resets.append(tenant)

    def apply(self, session, outcome, context) -> None:  # type: ignore[no-untyped-def]
        self.applied.append((outcome.stage, list(outcome.lessons), outcome.reward, context))


def test_report_and_rebuild_iterate_the_one_list(make_service, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    recording = Recording()
    real = projections_module.projections

    def with_recording(alpha: float, q0: float, min_count: int):  # type: ignore[no-untyped-def]
        return [*real(alpha, q0, min_count), recording]

    monkeypatch.setattr(outcome_write, "projections", with_recording)
    monkeypatch.setattr(maintenance, "projections", with_recording)
    service = make_service(index="memory")
    lesson = LessonCreate(
        kind="insight", text="tile in shared memory", applicability={"op": "conv"}
    )
    (lesson_id,) = service.add_lessons([lesson]).ids
    toolchain = {"triton": "3.6.0"}
    retrieval = service.retrieve(
        RetrieveRequest(
            query="tile",
            task={"op": "conv"},
            context={"chip": "a100", "toolchain": toolchain},
            stage="draft",
        )
    )
    outcome = {"compiled": True, "correct": True}
    answer = service.report(ReportRequest(retrieval_id=retrieval.retrieval_id, outcome=outcome))
    assert answer.reward == 1.0
    (applied,) = recording.applied
    assert applied[:3] == ("draft", [lesson_id], 1.0)  # after the reward projection
    assert applied[3]["toolchain"] == toolchain

    before = service.value_table()
    assert service.rebuild_values() == 1
    assert recording.resets == [None]
    assert recording.applied == [applied, applied]  # the same outcome, the same facts
    assert service.value_table() == before
