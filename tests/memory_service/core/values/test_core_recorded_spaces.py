"""The one recorded-space loader (`values.recorded_spaces.load_spaces`), which the generalised
value and the transfer audit both read: the fastest feasible time of each configuration, no
time for an infeasible one, None for a run with nothing feasible and timed (synthetic runs)."""

from __future__ import annotations

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.values.recorded_spaces import load_spaces
from tunemem.retrieval.transfer import config_key


def _run(source: str, attempts: list[AttemptRecord]) -> TrajectoryRecord:
    return TrajectoryRecord(
        "native",
        source,
        TaskSpec("softmax", "row_softmax", {"N": 4096, "problem_size": [4096]}, "fp16"),
        ContextSpec("a100", "cuda"),
        attempts,
        synthetic=True,
    )


def test_spaces_keep_the_fastest_feasible_time(make_service) -> None:  # type: ignore[no-untyped-def]
    service = make_service(index="memory")
    timed = _run(
        "timed",
        [
            AttemptRecord(0, {"BLOCK": 64}, latency_ms=2.0),
            AttemptRecord(1, {"BLOCK": 64}, latency_ms=1.5),  # the same config, faster
            AttemptRecord(2, {"BLOCK": 128}, latency_ms=1.0, correct=False),
            AttemptRecord(3, {"BLOCK": 256}, latency_ms=0.5, error_category="runtime"),
            AttemptRecord(4, {"BLOCK": 512}, latency_ms=3.0, correct=None),  # unchecked: counts
        ],
    )
    failed = _run("failed", [AttemptRecord(0, {"BLOCK": 64}, compiled=False, correct=None)])
    service.ingest([timed, failed])
    with service.store.session() as session:
        spaces = load_spaces(
            session,
            [(t.id, "a100", "softmax", {"signature": t.task.signature}) for t in (timed, failed)],
        )
    assert spaces[failed.id] is None
    space = spaces[timed.id]
    assert space is not None
    assert space.keys == frozenset({"BLOCK"}) and space.problem == "[4096]"
    assert space.space.latency == {
        config_key({"BLOCK": 64}): 1.5,
        config_key({"BLOCK": 128}): None,
        config_key({"BLOCK": 256}): None,
        config_key({"BLOCK": 512}): 3.0,
    }
    assert space.space.optimum_ms == 1.5
