"""The tuners' transport to the memory (`agent_client.tuners.memory_link`) against a hostile
memory (issue 30, case 6): one deadline for the whole request (a trickle included), one try, a
cap on the answer; reports in the background, bounded; suggestions checked against the user's
own space. The memory is `hostile_memory.HostileMemory` (SYNTHETIC answers, no service).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import pytest

from tests.agent_client.hostile_memory import HostileMemory
from tunemem.agent_client.models import Outcome
from tunemem.agent_client.tuners.memory_answers import usable_suggestions
from tunemem.agent_client.tuners.memory_link import MemoryLink, MemoryLinkError, Reporter

SPACE = {"BLOCK": (16, 32, 64), "WARPS": (1, 2), "SHMEM": (0, 1)}
OUTCOME = Outcome(compiled=True, correct=True, latency_ms=1.0)


@pytest.fixture
def hostile() -> Iterator[HostileMemory]:
    memory = HostileMemory()
    yield memory
    memory.close()


def _suggest(link: MemoryLink) -> dict:
    return link.suggest({"op": "scale"}, {"chip": "cpu"}, {"params": SPACE}, k=3)


# -- the transport ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hang", "trickle", "error", "huge"])
def test_one_request_is_one_deadline_and_one_try(hostile: HostileMemory, mode: str):
    hostile.mode = mode
    link = MemoryLink(hostile.url, timeout_s=1.0)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(MemoryLinkError):
            _suggest(link)
        took = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert took < 1.5, f"{mode}: {took:.1f} s for a 1 s deadline"
    assert hostile.requests == {"/v1/suggest": 1}  # no retry
    assert peak < 24 * 2**20, f"{mode}: {peak / 2**20:.0f} MB held"


@pytest.mark.parametrize("malformed", ["text", "list"])
def test_an_answer_that_is_not_a_json_object_is_a_failure(hostile: HostileMemory, malformed):
    hostile.mode, hostile.malformed = "malformed", malformed
    with pytest.raises(MemoryLinkError):
        _suggest(MemoryLink(hostile.url, timeout_s=2.0))


def test_only_untried_configurations_of_the_users_space_are_usable():
    valid = [(16, 1, 0), (32, 1, 0), (64, 2, 1)]
    answer = {
        "suggestions": [
            {"config": {"BLOCK": 16, "WARPS": 1, "SHMEM": 0}},  # tried
            {"config": {"BLOCK": 32, "WARPS": 1, "SHMEM": False}},  # false is not 0
            {"config": {"BLOCK": 32, "WARPS": 1}},  # a parameter missing
            {"config": {"BLOCK": 32, "WARPS": 1, "SHMEM": 0, "X": 1}},  # one too many
            {"config": {"BLOCK": "32", "WARPS": 1, "SHMEM": 0}},  # text for a number
            {"config": {"BLOCK": 4096, "WARPS": 1, "SHMEM": 0}},  # outside the space
            {"config": {"BLOCK": 16, "WARPS": 2, "SHMEM": 1}},  # the restrictions exclude it
            {"config": {"BLOCK": [32], "WARPS": 1, "SHMEM": 0}},  # a list
            {"config": {"BLOCK": 32.0, "WARPS": 1, "SHMEM": 0}, "lessons": "x", "source": 3},
            {"config": {"BLOCK": 32, "WARPS": 1, "SHMEM": 0}},  # the same again
            "junk",
            {"config": "BLOCK=64"},
        ]
    }
    usable, refused = usable_suggestions(answer, SPACE, valid, tried=[(16, 1, 0)])
    assert [u.config for u in usable] == [{"BLOCK": 32, "WARPS": 1, "SHMEM": 0}]
    assert type(usable[0].config["BLOCK"]) is int  # the user's own value, not the memory's
    assert usable[0].lessons == [] and usable[0].source == ""
    assert refused == 11
    assert usable_suggestions({"suggestions": "x"}, SPACE, None, []) == ([], 1)
    assert usable_suggestions([1, 2], SPACE, None, []) == ([], 1)


def test_reports_go_in_the_background_and_a_hung_memory_costs_one_deadline(hostile):
    hostile.report_mode = "hang"
    link = MemoryLink(hostile.url, timeout_s=0.5)
    said: list[str] = []
    reporter = Reporter(said.append)
    started = time.monotonic()
    for _ in range(50):
        reporter.submit(lambda: link.report("r", OUTCOME, used=[]))
    assert time.monotonic() - started < 0.2  # the user's loop does not wait
    assert reporter.flush(3.0)
    assert time.monotonic() - started < 2.0
    assert len(said) == 1 and hostile.requests == {"/v1/outcomes": 1}
    assert reporter.sent == 0 and reporter.dropped == 49
    assert not reporter.submit(lambda: None)  # within the back-off, nothing is sent


def test_a_full_queue_drops_reports_instead_of_growing():
    reporter = Reporter(lambda message: None, max_pending=3)
    block = [time.monotonic() + 0.3]
    accepted = [reporter.submit(lambda: time.sleep(max(0.0, block[0] - time.monotonic())))]
    accepted += [reporter.submit(lambda: None) for _ in range(10)]
    assert sum(accepted) <= 4 and reporter.dropped >= 7
    assert reporter.flush(2.0)
