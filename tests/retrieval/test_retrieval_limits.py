"""Failures from a resource limit of their chip: they warn on another chip only where the limit
applies, always with the reason, and a search does not exclude them where it does not."""

from __future__ import annotations

from tunemem.retrieval.limits import is_resource_limit, limit_caveat
from tunemem.search.hints import HintedLesson, Hints

SHMEM = {"avoid": {"block_size_x": 1024}, "failure_rate": 0.9, "error_category": "resources"}


def test_a_resource_failure_is_recognised_by_category_or_message() -> None:
    assert is_resource_limit("failure", SHMEM)
    assert is_resource_limit(
        "failure", {"error_category": "runtime", "example_error": "LDS size exceeded"}
    )
    assert not is_resource_limit("failure", {"error_category": "compile"})
    assert not is_resource_limit("insight", SHMEM)


def test_a_chip_with_more_on_chip_memory_is_not_told_to_avoid() -> None:
    caveat = limit_caveat("NVIDIA A100", 164, "NVIDIA H100 SXM5", 228)
    assert not caveat.applies
    assert "228 KB" in caveat.reason and "164 KB" in caveat.reason and "A100" in caveat.reason


def test_a_chip_with_no_more_keeps_the_warning_and_says_why() -> None:
    caveat = limit_caveat("NVIDIA A100", 164, "AMD Radeon PRO W6600", 64)
    assert caveat.applies and "limit applies" in caveat.reason
    unknown = limit_caveat("NVIDIA A100", 164, "some GPU", None)
    assert unknown.applies and "may not apply" in unknown.reason


def test_a_search_does_not_exclude_settings_whose_limit_the_target_lacks() -> None:
    carried = Hints([HintedLesson("l1", SHMEM)])
    assert carried.excluded({"block_size_x": 1024})
    lifted = Hints([HintedLesson("l1", SHMEM, avoid_applies=False)])
    assert not lifted.excluded({"block_size_x": 1024})
    assert lifted.skipped and "resource limit" in lifted.skipped[0][1]
