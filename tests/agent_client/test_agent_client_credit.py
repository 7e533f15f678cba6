"""Which lessons an attempt credits: the proposal's, and the setting lessons its config carries."""

from __future__ import annotations

from agent_client.credit import carried_settings, credited

LESSONS = [
    {"id": "ex", "hint": {"config": {"a": 1, "b": 2}}},
    {"id": "pa", "hint": {"param": "a", "value": 1, "effect": "prefer"}},
    {"id": "pb", "hint": {"param": "b", "value": "4", "effect": "prefer"}},
    {"id": "va", "hint": {"param": "a", "value": 1, "effect": "avoid"}},
    {"id": "fail", "hint": {"avoid": {"a": 1}, "failure_rate": 0.9}},
    {"id": "plain", "hint": None},
]


def test_carried_prefer_settings_are_credited_and_nothing_else() -> None:
    assert carried_settings(LESSONS, {"a": 1, "b": 2}) == ["pa"]
    assert carried_settings(LESSONS, {"a": 2, "b": 4}) == ["pb"]  # 4 and "4" are one setting
    assert carried_settings(LESSONS, {"c": 1}) == []


def test_credited_keeps_the_proposal_first_and_each_id_once() -> None:
    assert credited(["ex"], LESSONS, {"a": 1, "b": 4}) == ["ex", "pa", "pb"]
    assert credited(["pa"], LESSONS, {"a": 1, "b": 2}) == ["pa"]
    assert credited([], LESSONS, {"a": 3, "b": 3}) == []
