"""Generalised values in the service: recorded reach ranks lessons, the breakdown names its
terms, and `values rebuild` reproduces the live values (SYNTHETIC trajectories)."""

from __future__ import annotations

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

KEYS = ["bx", "tx"]


def _trajectory(chip: str, best_bx: int) -> TrajectoryRecord:
    """A SYNTHETIC recorded search space (invented times): fastest at bx = best_bx."""
    attempts = []
    for bx in (16, 32, 64, 128):
        for tx in (1, 2, 4):
            latency = 1.0 + abs(bx - best_bx) / 16 + 0.1 * tx
            attempts.append(AttemptRecord(len(attempts), {"bx": bx, "tx": tx}, latency_ms=latency))
    return TrajectoryRecord(
        source_format="native",
        source=f"synthetic/{chip}",
        task=TaskSpec("synthconv", signature={"tune_params_keys": KEYS}),
        context=ContextSpec(chip, "cuda"),
        attempts=attempts,
        synthetic=True,
    )


def _retrieve(service, chip: str, values: str, stage: str = "draft"):
    return service.retrieve(
        RetrieveRequest(
            query="tune synthconv",
            task={"op": "synthconv", "signature": {"tune_params_keys": KEYS}},
            context={"chip": chip},
            stage=stage,
            k=30,
            options={"values": values, "k_recall": 60},
        )
    )


def test_recorded_reach_and_rebuild(make_service) -> None:
    service = make_service(index="memory")
    # a100 and a4000 recorded; rtx-3090 is the target (no recording of its own).
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    chain = _retrieve(service, "rtx-3090", "chain")
    assert all(lesson.breakdown.value == 0.0 for lesson in chain.lessons)
    general = _retrieve(service, "rtx-3090", "generalised")
    exemplars = [x for x in general.lessons if (x.hint or {}).get("config")]
    assert exemplars
    for lesson in exemplars:
        terms = lesson.breakdown.value_terms
        assert "prior" in terms and abs(sum(terms.values()) - 1.0) < 1e-9
        assert {"recorded:chip:a100", "recorded:chip:a4000"} <= set(terms)
    # The exemplar reaching furthest on both recorded chips has the highest value.
    best = max(exemplars, key=lambda x: x.breakdown.value)
    assert best.hint["config"]["bx"] in (64, 128)

    # Outcomes on the target add an own term; rebuilding from the log changes nothing.
    for i, lesson in enumerate(exemplars[:3]):
        retrieval = _retrieve(service, "rtx-3090", "generalised")
        service.report(
            ReportRequest(
                retrieval_id=retrieval.retrieval_id,
                used=[lesson.id],
                outcome=OutcomeIn(compiled=True, correct=i != 1, latency_ms=1.0 + i),
            )
        )
    live = {
        x.id: (x.breakdown.value, x.breakdown.value_terms)
        for x in _retrieve(service, "rtx-3090", "generalised").lessons
    }
    assert any("chip:rtx-3090" in terms for _, terms in live.values())
    assert service.rebuild_values() == 3
    rebuilt = {
        x.id: (x.breakdown.value, x.breakdown.value_terms)
        for x in _retrieve(service, "rtx-3090", "generalised").lessons
    }
    assert rebuilt == live


def test_generalised_values_on_a_memory_without_recordings(make_service) -> None:
    service = make_service(index="memory")
    service.add_lessons(
        [
            LessonCreate(
                kind="exemplar",
                text="synthconv on a100: bx=64 tx=2 was fastest",
                hint={"config": {"bx": 64, "tx": 2}},
                applicability={"op": "synthconv", "chips": ["a100"], "backends": ["cuda"]},
            )
        ]
    )
    (lesson,) = _retrieve(service, "rtx-3090", "generalised").lessons
    assert lesson.breakdown.value == 0.0 and lesson.breakdown.value_scope == "prior"


def test_the_default_ranking_is_generalised(make_service) -> None:
    service = make_service(index="memory")
    service.ingest([_trajectory("a100", 64), _trajectory("a4000", 128)])
    response = service.retrieve(
        RetrieveRequest(
            task={"op": "synthconv", "signature": {"tune_params_keys": KEYS}},
            context={"chip": "rtx-3090"},
            stage="draft",
            k=5,
        )
    )
    assert response.settings["values"] == "generalised"
    assert response.settings["value_floor"] == 0.1
    assert response.settings["affinity_floor"] == 0.1
    assert response.settings["claim_power"] == 0.0 and response.settings["claim_kappa"] == 2.0
    assert any("recorded:chip:a100" in x.breakdown.value_terms for x in response.lessons)


def _setting(param: str, value: int, effect: str, chip: str) -> LessonCreate:
    return LessonCreate(
        kind="insight",
        text=f"synthconv on {chip}: {effect} {param}={value}",
        hint={"param": param, "value": value, "effect": effect},
        applicability={"op": "synthconv", "chips": [chip], "backends": ["cuda"]},
    )


def test_setting_lessons_are_valued_by_their_recorded_effect(make_service) -> None:
    service = make_service(index="memory")
    service.ingest([_trajectory("a100", 128), _trajectory("a4000", 128)])
    service.add_lessons(
        [
            _setting("bx", 128, "prefer", "a100"),  # holds on both recorded chips
            _setting("bx", 16, "prefer", "a100"),  # the slowest value on both
            _setting("bx", 16, "avoid", "a4000"),  # right on both
        ]
    )
    lessons = {
        (x.hint["value"], x.hint["effect"]): x
        for x in _retrieve(service, "rtx-3090", "generalised").lessons
        if (x.hint or {}).get("param") == "bx"
    }
    good, bad, avoid = lessons[(128, "prefer")], lessons[(16, "prefer")], lessons[(16, "avoid")]
    for lesson in (good, bad, avoid):
        assert {"effect:chip:a100", "effect:chip:a4000"} <= set(lesson.breakdown.value_terms)
    assert good.breakdown.value > 0 > bad.breakdown.value
    assert avoid.breakdown.value > 0
    assert good.breakdown.value > avoid.breakdown.value  # bx=128 is fastest, bx!=16 only faster

    # An outcome crediting the setting on the target adds an own term; rebuild reproduces it.
    retrieval = _retrieve(service, "rtx-3090", "generalised", stage="refine")
    service.report(
        ReportRequest(
            retrieval_id=retrieval.retrieval_id,
            used=[good.id],
            outcome=OutcomeIn(compiled=True, correct=True, latency_ms=1.0, best_before_ms=2.0),
        )
    )

    def refine_values() -> dict:
        return {
            x.id: (x.breakdown.value, x.breakdown.value_terms)
            for x in _retrieve(service, "rtx-3090", "generalised", stage="refine").lessons
        }

    live = refine_values()
    assert "chip:rtx-3090" in live[good.id][1]
    assert service.rebuild_values() >= 1
    assert refine_values() == live
