"""`tune_moe` on the tuners' one untrusted-memory policy (`tuners.memory_policy`), as the Triton
drop-in and the Kernel Tuner strategy: a memory that is down, hung, trickling, erring, endless
or answering garbage on every path leaves the run with exactly the configurations and timings
of a run with no memory, at the cost of one deadline and one warning of the one class users
filter (`tunemem.tuners.MemoryUnavailableWarning`); a busy memory is left alone for its
Retry-After, as the drop-in leaves it.

The memory is `hostile_memory.HostileMemory` (SYNTHETIC answers, no service); the timing
function is SYNTHETIC (a formula).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_client.hostile_memory import HostileMemory, closed_port_url
from tunemem.agent_client.tuners.moe.tune import MoeShape, MoeTuning, tune_moe

SHAPE = MoeShape(8, 64, 128, 2)
SIZES = [1, 16, 64]
DEADLINE_S = 1.0


def timing(config: dict[str, int], num_tokens: int, *_args: Any) -> float:
    """SYNTHETIC microseconds."""
    return 10.0 + config["BLOCK_SIZE_M"] / 16 + config["num_stages"] + num_tokens / 64


def run(url: str | None) -> tuple[MoeTuning, list[warnings.WarningMessage], float]:
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tune_moe(
            SHAPE, SIZES, timing, memory_url=url, device_name="Test GPU", budget=12,
            timeout_s=DEADLINE_S,
        )  # fmt: skip
    return result, caught, time.monotonic() - started


def timed(result: MoeTuning) -> dict[int, list[tuple[Any, ...]]]:
    return {
        m: [(r["round"], r["origin"], sorted(r["config"].items()), r["us"]) for r in rows]
        for m, rows in result.timed.items()
    }


@pytest.fixture
def hostile() -> Iterator[HostileMemory]:
    memory = HostileMemory()
    yield memory
    memory.close()


def test_the_moe_tool_warns_with_the_tuners_one_warning_class():
    import tunemem.tuners
    from tunemem.agent_client.tuners.helion import seeds
    from tunemem.agent_client.tuners.moe import memory

    assert memory.MemoryUnavailableWarning is tunemem.tuners.MemoryUnavailableWarning
    assert seeds.MemoryUnavailableWarning is tunemem.tuners.MemoryUnavailableWarning
    _, caught, _ = run(closed_port_url())
    ours = [w for w in caught if issubclass(w.category, tunemem.tuners.MemoryUnavailableWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]


@pytest.mark.parametrize("mode", ["down", "hang", "trickle", "error", "huge", "malformed"])
def test_a_failing_memory_leaves_the_run_of_no_memory_within_one_deadline(hostile, mode):
    alone, _, alone_s = run(None)
    if mode == "down":
        url = closed_port_url()
    else:
        hostile.mode = hostile.report_mode = hostile.lessons_mode = mode
        hostile.trickle_s = 0.2
        url = hostile.url
    result, caught, took = run(url)
    said = [str(w.message) for w in caught if "memory" in str(w.message)]
    assert len(said) == 1, said
    assert timed(result) == timed(alone)  # the same rounds, configurations and timings
    assert not result.memory_used
    assert took < alone_s + DEADLINE_S + 1.0, f"{mode}: {took:.1f} s against {alone_s:.1f} s"
    assert sum(hostile.requests.values()) <= 1  # one request, never retried nor asked again


def test_a_busy_memory_is_left_alone_for_its_retry_after(hostile):
    hostile.mode = "busy"
    hostile.retry_after = "60"
    result, caught, _ = run(hostile.url)
    assert [w for w in caught if "unavailable" in str(w.message)] == []  # busy is not away
    assert hostile.requests.get("/v1/suggest") == 1  # asked again after a minute, not a round
    assert any("busy" in w for w in result.warnings)
