"""One value per lesson and context at every door: a report answers with the estimate the next
retrieve ranks by, named by the same scope (SYNTHETIC trajectories, invented times)."""

from __future__ import annotations

import pytest

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonFilter
from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

KEYS = ["bx", "tx"]


def _trajectory(chip: str, best_bx: int) -> TrajectoryRecord:
    attempts = [
        AttemptRecord(
            len(KEYS) * i + j,
            {"bx": bx, "tx": tx},
            latency_ms=1.0 + abs(bx - best_bx) / 16 + 0.1 * tx,
        )
        for i, bx in enumerate((16, 32, 64, 128))
        for j, tx in enumerate((1, 2))
    ]
    return TrajectoryRecord(
        source_format="native",
        source=f"synthetic/{chip}",
        task=TaskSpec("synthconv", signature={"tune_params_keys": KEYS}),
        context=ContextSpec(chip, "cuda"),
        attempts=attempts,
        synthetic=True,
    )


def _retrieve(service, chip: str, values: str | None, toolchain: dict | None = None):
    return service.retrieve(
        RetrieveRequest(
            query="tune synthconv",
            task={"op": "synthconv", "signature": {"tune_params_keys": KEYS}},
            context={"chip": chip, "toolchain": toolchain or {}},
            stage="draft",
            k=5,
            options={"values": values} if values else {},
        )
    )


@pytest.mark.parametrize(
    ("values", "toolchain"),
    [(None, None), ("generalised", None), ("chain", None), (None, {"triton": "3.6.0"})],
)
def test_report_answers_with_the_value_the_next_retrieve_shows(
    make_service, values, toolchain
) -> None:
    service = make_service(index="memory")
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    for round_, correct in enumerate((True, False, True)):
        got = _retrieve(service, "rtx-3090", values, toolchain)
        used = [got.lessons[0].id, got.lessons[1].id]
        receipt = service.report(
            ReportRequest(
                retrieval_id=got.retrieval_id,
                used=used,
                outcome=OutcomeIn(compiled=True, correct=correct, latency_ms=1.0 + round_),
            )
        )
        after = {
            x.id: x.breakdown for x in _retrieve(service, "rtx-3090", values, toolchain).lessons
        }
        for lid in used:
            if lid not in after:  # ranked out of the top k: nothing to compare
                continue
            now = receipt.values[lid]
            assert now.value == pytest.approx(after[lid].value, abs=1e-12)
            assert now.value_scope == after[lid].value_scope
            assert now.n == after[lid].n


def test_a_reward_above_the_value_never_lowers_it(make_service) -> None:
    service = make_service(index="memory")
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    got = _retrieve(service, "rtx-3090", None)
    before = {x.id: x.breakdown.value for x in got.lessons}
    receipt = service.report(
        ReportRequest(
            retrieval_id=got.retrieval_id,
            used=[got.lessons[0].id],
            outcome=OutcomeIn(compiled=True, correct=True),
        )
    )
    lid = got.lessons[0].id
    assert receipt.rewards[lid] == 1.0 and before[lid] < 1.0
    assert receipt.values[lid].value > before[lid]


def test_the_valued_listing_shows_the_same_value(make_service) -> None:
    """`lessons top` / `GET /v1/lessons?sort=value` / the /ui page: the value a report gave."""
    service = make_service(index="memory")
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    got = _retrieve(service, "rtx-3090", None)
    receipt = service.report(
        ReportRequest(
            retrieval_id=got.retrieval_id,
            used=[got.lessons[0].id],
            outcome=OutcomeIn(compiled=True, correct=True),
        )
    )
    listed = service.list_lessons(LessonFilter(sort="value", chip="rtx-3090", stage="draft"))
    (lesson,) = listed.data
    now = receipt.values[got.lessons[0].id]
    assert lesson.id == got.lessons[0].id
    assert lesson.value.value == pytest.approx(now.value, abs=1e-12)
    assert lesson.value.value_scope == now.value_scope


@pytest.mark.parametrize("values", ["generalised", "chain"])
def test_every_door_names_the_one_estimate_with_its_terms(make_service, values) -> None:
    """Retrieve, the report's answer, the valued listing and the lesson itself show one estimate
    of a lesson in a chip's context: the same value, interval and scope, the same terms, and
    the name of the estimator that made it."""
    service = make_service(index="memory", values=values)
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    got = _retrieve(service, "rtx-3090", None)
    lid = got.lessons[0].id
    service.report(
        ReportRequest(
            retrieval_id=got.retrieval_id,
            used=[lid],
            outcome=OutcomeIn(compiled=True, correct=True, latency_ms=1.0),
        )
    )
    again = _retrieve(service, "rtx-3090", None)
    receipt = service.report(
        ReportRequest(
            retrieval_id=again.retrieval_id,
            used=[lid],
            outcome=OutcomeIn(compiled=True, correct=True, latency_ms=0.9),
        )
    )
    answered = receipt.values[lid]
    shown = next(x for x in _retrieve(service, "rtx-3090", None).lessons if x.id == lid).breakdown
    (listed,) = service.list_lessons(LessonFilter(sort="value", chip="rtx-3090")).data
    detail = service.get_lesson(lid)
    (in_context,) = [v for v in detail.in_context if v.chip == "rtx-3090" and v.stage == "draft"]
    assert answered.estimator == shown.estimator == listed.value.estimator == values
    assert in_context.estimator == values
    for other in (listed.value, in_context):
        assert other.value == pytest.approx(answered.value, abs=1e-12)
        assert (other.ci_low, other.ci_high) == pytest.approx((answered.ci_low, answered.ci_high))
        assert other.value_scope == answered.value_scope == shown.value_scope
        assert other.terms == pytest.approx(answered.terms)
    assert shown.value == pytest.approx(answered.value, abs=1e-12)
    assert shown.value_terms == pytest.approx(answered.terms)
    assert answered.terms and sum(answered.terms.values()) == pytest.approx(1.0)
    assert -1.0 <= answered.ci_low <= answered.value <= answered.ci_high <= 1.0
