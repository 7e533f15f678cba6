"""The retrieve breakdown is the ranking's record shown whole: every field a ranked lesson
carries (but its id and score, which the answer shows beside the breakdown) is a breakdown
field of the same name, so a field added to the ranking cannot be dropped on the way out."""

from __future__ import annotations

import dataclasses

from tunemem.memory_service.core.schemas.learning import Breakdown
from tunemem.retrieval.ranking import RankedLesson


def test_every_field_of_a_ranked_lesson_is_shown_in_the_breakdown() -> None:
    ranked = {f.name for f in dataclasses.fields(RankedLesson)} - {"lesson_id", "score"}
    assert ranked <= set(Breakdown.model_fields)


def test_the_breakdown_of_a_ranked_lesson_carries_its_numbers() -> None:
    ranked = RankedLesson(
        lesson_id="l",
        score=1.5,
        similarity=0.8,
        value=0.25,
        value_scope="recorded:chip:a100",
        n=2,
        exploration=0.1,
        z_sim=1.0,
        z_value=-0.5,
        ci_low=-0.2,
        ci_high=0.7,
        value_terms={"prior": 0.4, "recorded:chip:a100": 0.6},
        claim_trust={"recorded:chip:a100": 0.5},
    )
    shown = Breakdown.of(ranked, "generalised").model_dump()
    assert shown == {
        "similarity": 0.8,
        "value": 0.25,
        "value_scope": "recorded:chip:a100",
        "estimator": "generalised",
        "n": 2,
        "exploration": 0.1,
        "z_sim": 1.0,
        "z_value": -0.5,
        "ci_low": -0.2,
        "ci_high": 0.7,
        "value_terms": {"prior": 0.4, "recorded:chip:a100": 0.6},
        "claim_trust": {"recorded:chip:a100": 0.5},
        "toolchain": None,
        "source_run": None,
    }
