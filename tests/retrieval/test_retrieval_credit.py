"""Credit that follows the advice: each used lesson's verdict against the attempt's
configuration, and the reward it receives (hand-computed cases)."""

from __future__ import annotations

import pytest

from tunemem.retrieval.credit import lesson_reward, lesson_rewards, verdict

AVOID = {"avoid": {"tile_size_y": 4, "read_only": 1}, "error_category": "runtime"}
SLOW = {"param": "use_shmem", "value": 0, "effect": "avoid"}
PREFER = {"param": "use_shmem", "value": 1, "effect": "prefer"}
EXEMPLAR = {"config": {"block_size_x": 128, "tile_size_y": 4}}
TRIED = {"block_size_x": 128, "tile_size_y": 4, "read_only": 1, "use_shmem": 0}


def test_an_avoid_lesson_whose_settings_came_back_correct_is_contradicted() -> None:
    assert verdict("failure", AVOID, TRIED, True, None) == "contradicted"
    assert lesson_reward("contradicted", 1.0) == -1.0


def test_an_avoid_lesson_whose_settings_failed_again_is_confirmed() -> None:
    assert verdict("failure", AVOID, TRIED, False, None) == "confirmed"
    assert lesson_reward("confirmed", -1.0) == 1.0


def test_an_avoid_lesson_kept_away_from_is_followed() -> None:
    assert verdict("failure", AVOID, {**TRIED, "read_only": 0}, True, None) == "followed"


def test_a_slowness_warning_is_judged_by_speed() -> None:
    assert verdict("insight", SLOW, TRIED, True, True) == "contradicted"
    assert verdict("insight", SLOW, TRIED, True, False) == "confirmed"
    assert verdict("insight", SLOW, TRIED, True, None) == "untested"
    assert lesson_reward("untested", 0.4) is None


def test_an_exemplar_or_preference_not_used_earns_nothing() -> None:
    assert verdict("exemplar", EXEMPLAR, TRIED, True, None) == "followed"
    assert verdict("exemplar", EXEMPLAR, {**TRIED, "block_size_x": 64}, True, None) == (
        "not_followed"
    )
    assert verdict("insight", PREFER, TRIED, True, None) == "not_followed"
    assert lesson_reward("not_followed", 1.0) is None


@pytest.mark.parametrize(
    ("kind", "hint", "config"),
    [
        ("failure", AVOID, None),  # the report gave no configuration
        ("failure", AVOID, {"block_size_x": 128}),  # it does not mention the settings
        ("insight", None, TRIED),  # the lesson names no settings
        ("failure", {"avoid": {}, "error_category": "compile"}, TRIED),
    ],
)
def test_without_evidence_of_what_the_attempt_did_credit_stays_the_stage_reward(
    kind, hint, config
) -> None:
    assert verdict(kind, hint, config, True, None) == "unknown"
    assert lesson_reward("unknown", 0.25) == 0.25


def test_values_as_json_wrote_them_compare_equal() -> None:
    assert verdict("failure", AVOID, {"tile_size_y": 4.0, "read_only": "1"}, True, None) == (
        "contradicted"
    )
    assert verdict("insight", {"param": "p", "value": True}, {"p": "true"}, True, None) == (
        "followed"
    )


def test_lesson_rewards_leave_out_lessons_without_an_update() -> None:
    verdicts = {"a": "contradicted", "b": "not_followed", "c": "a verdict from a later version"}
    assert lesson_rewards(["a", "b", "c", "d"], verdicts, 1.0) == {"a": -1.0, "c": 1.0, "d": 1.0}
