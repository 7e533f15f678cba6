"""The benchmark arms are defined once (`bench.common.arms`): bench learning and bench live run
the same options under the same name, and each value arm names the estimate it runs."""

from __future__ import annotations

from tunemem.bench.common import arms


def test_learning_and_live_share_the_one_table() -> None:
    from tunemem.bench.learning import run as learning
    from tunemem.bench.live import memories
    from tunemem.bench.live import run as live

    assert learning.ARMS is arms.ARMS and memories.ARMS is arms.ARMS and live.ARMS is arms.ARMS
    assert set(arms.LIVE_ARMS) <= set(arms.ARMS)
    assert live.parser().parse_args([]).arms == ",".join(arms.LIVE_ARMS)
    assert arms.LIVE_SERVICE_SETTINGS == {**arms.SERVICE_SETTINGS, "dedup_threshold": 1.0}


def test_each_value_arm_names_its_estimate() -> None:
    assert arms.ARMS["value"]["values"] == "chain"  # type: ignore[index]
    assert arms.ARMS["value_backoff"]["values"] == "chain"  # type: ignore[index]
    assert arms.ARMS["generalised"]["values"] == "generalised"  # type: ignore[index]
    assert arms.ARMS["random"] is None and arms.ARMS["default"] == {}
