"""Outcome reports: the write holds the store's write lock, the answer's value estimates do not;
a duplicate report replays the outcome it first wrote."""

from __future__ import annotations

import threading

from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest


def _service_with_retrievals(make_service, count: int):
    service = make_service(index="memory")
    service.add_lessons(
        [
            LessonCreate(
                kind="insight",
                text="tile the convolution in shared memory",
                applicability={"op": "convolution"},
            )
        ]
    )
    retrievals = [
        service.retrieve(
            RetrieveRequest(
                query="tile", task={"op": "convolution"}, context={"chip": "a100"}, stage="draft"
            )
        )
        for _ in range(count)
    ]
    assert all(r.lessons for r in retrievals)
    return service, retrievals


def _report(service, retrieval, correct: bool = True, key: str | None = None):
    return service.report(
        ReportRequest(
            retrieval_id=retrieval.retrieval_id,
            outcome={"compiled": True, "correct": correct},
        ),
        idempotency_key=key,
    )


def test_a_slow_estimate_does_not_hold_up_another_report(make_service, monkeypatch) -> None:
    """While one report estimates its answer's values, another report writes and answers."""
    service, (first, second) = _service_with_retrievals(make_service, 2)
    evidence = service._learning.evidence
    estimating, release = threading.Event(), threading.Event()
    real = evidence.estimates
    calls = []

    def slow_first(*args, **kwargs):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            estimating.set()
            release.wait(timeout=20)
        return real(*args, **kwargs)

    monkeypatch.setattr(evidence, "estimates", slow_first)
    answers: dict[str, object] = {}
    slow = threading.Thread(
        target=lambda: answers.setdefault("slow", _report(service, first)), name="slow"
    )
    slow.start()
    try:
        assert estimating.wait(timeout=20), "the first report never estimated its values"
        other = threading.Thread(
            target=lambda: answers.setdefault("other", _report(service, second, correct=False)),
            name="other",
        )
        other.start()
        other.join(timeout=10)
        # The old report estimated inside the write lock: the second report waited for it.
        assert not other.is_alive(), "a report waited for another report's value estimates"
    finally:
        release.set()
        slow.join(timeout=20)
    assert set(answers) == {"slow", "other"}
    slow_answer, other_answer = answers["slow"], answers["other"]
    assert slow_answer.reward == 1.0 and other_answer.reward == -1.0
    assert slow_answer.outcome_id != other_answer.outcome_id
    # Both outcomes are in the log and in the values; the slow report had committed before it
    # estimated, so both answers count both outcomes on the chip.
    (lesson,) = slow_answer.values
    assert slow_answer.values[lesson].n == 2 and other_answer.values[lesson].n == 2
    assert service.rebuild_values() == 2


def test_the_write_lock_is_free_while_the_answer_is_estimated(make_service, monkeypatch) -> None:
    service, (retrieval,) = _service_with_retrievals(make_service, 1)
    evidence = service._learning.evidence
    real = evidence.estimates
    lock_free: list[bool] = []

    def probe(*args, **kwargs):
        # Another thread must be able to take the write lock now (an RLock held by this
        # thread would let this thread in again, so ask from another one).
        def take() -> None:
            taken = service.store.write_lock.acquire(timeout=0.5)
            if taken:
                service.store.write_lock.release()
            lock_free.append(taken)

        thread = threading.Thread(target=take)
        thread.start()
        thread.join()
        return real(*args, **kwargs)

    monkeypatch.setattr(evidence, "estimates", probe)
    answer = _report(service, retrieval)
    assert lock_free == [True]
    assert answer.values and not answer.duplicate


def test_a_duplicate_replays_the_outcome_with_the_values_now(make_service) -> None:
    service, (first, second) = _service_with_retrievals(make_service, 2)
    once = _report(service, first, key="attempt-1")
    again = _report(service, first, key="attempt-1")
    assert again.duplicate and not once.duplicate
    assert again.model_dump(exclude={"duplicate"}) == once.model_dump(exclude={"duplicate"})
    # Another outcome credits the lesson: a replay still answers with the first outcome and
    # reward, and with the lesson's values as they are now.
    _report(service, second, correct=False)
    later = _report(service, first, key="attempt-1")
    assert later.duplicate
    assert (later.outcome_id, later.reward, later.rewards) == (
        once.outcome_id,
        once.reward,
        once.rewards,
    )
    (lesson,) = once.values
    assert once.values[lesson].n == 1 and later.values[lesson].n == 2
    assert later.values[lesson].value < once.values[lesson].value
    assert service.rebuild_values() == 2


def test_a_report_with_an_error_is_not_feasible(make_service) -> None:
    """One definition of feasible (`ingest.records.is_feasible`): a reported error makes the
    attempt infeasible even when it says correct (draft reward -1); without one, +1."""
    service, (with_error, clean) = _service_with_retrievals(make_service, 2)
    outcome = {"compiled": True, "correct": True, "error": "wrong results on one shape"}
    failed = service.report(ReportRequest(retrieval_id=with_error.retrieval_id, outcome=outcome))
    assert failed.reward == -1.0
    assert _report(service, clean).reward == 1.0
