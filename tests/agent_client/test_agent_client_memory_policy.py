"""`memory_policy.MemoryGuard`, the tuners' one policy, against SYNTHETIC failures (no server):
one warning per failure and the memory left alone, a 429 left alone for its Retry-After with
one note and no warning (questions held, reports still sent), reports dropped while the memory
is left alone after a failure."""

from __future__ import annotations

import time
from typing import Any

from tunemem.agent_client.tuners.memory_link import MemoryBusyError, MemoryLink, MemoryLinkError
from tunemem.agent_client.tuners.memory_policy import MemoryGuard


def guard(retry_after_s: float = 300.0) -> tuple[MemoryGuard, list[str], list[str]]:
    said: list[str] = []
    noted: list[str] = []
    link = MemoryLink("http://memory.invalid", timeout_s=1.0)
    return (
        MemoryGuard(link, said.append, note=noted.append, retry_after_s=retry_after_s),
        said,
        noted,
    )


def failing(exc: Exception) -> Any:
    def call(_link: MemoryLink) -> Any:
        raise exc

    return call


def test_a_failure_is_one_warning_then_the_memory_is_left_alone():
    memory, said, _ = guard()
    asked: list[int] = []
    assert memory.ask("suggest", failing(MemoryLinkError("no answer within 1 s"))) is None
    assert memory.ask("suggest", lambda link: asked.append(1)) is None  # not asked at all
    assert asked == [] and not memory.available
    assert said == ["unavailable (suggest: MemoryLinkError: no answer within 1 s)"]
    assert memory.submit(lambda link: asked.append(2)) is False  # reports dropped too


def test_the_memory_is_asked_again_after_the_hold():
    memory, said, _ = guard(retry_after_s=0.05)
    memory.ask("suggest", failing(ValueError("garbage")))
    time.sleep(0.1)
    assert memory.ask("suggest", lambda link: {"ok": True}) == {"ok": True}
    assert len(said) == 1


def test_busy_is_a_note_and_a_hold_for_its_retry_after_never_a_warning():
    memory, said, noted = guard()
    for _ in range(3):
        memory.ask("suggest", failing(MemoryBusyError("busy", retry_after_s=0.05)))
    assert said == [] and len(noted) == 1 and "busy" in noted[0]
    assert memory.busy == 1 and not memory.available  # held: the next two were not asked
    time.sleep(0.1)
    assert memory.available and memory.failures == 0


def test_busy_holds_questions_not_reports():
    """A 429 to a question says nothing of writes (the server caps suggests, not reports): the
    reports of the round go on; they used to be dropped for the whole Retry-After."""
    memory, said, _ = guard()
    memory.ask("suggest", failing(MemoryBusyError("busy", retry_after_s=60)))
    sent: list[int] = []
    assert not memory.available
    assert memory.submit(lambda link: sent.append(1)) is True
    assert memory.flush(2.0) and sent == [1] and said == []


def test_a_retry_after_of_zero_asks_again_at_once():
    memory, _, noted = guard()
    memory.ask("suggest", failing(MemoryBusyError("busy", retry_after_s=0.0)))
    assert memory.available and memory.busy == 1 and len(noted) == 1  # not BUSY_HOLD_S (10 s)


def test_a_failed_report_warns_once_and_leaves_the_memory_alone():
    memory, said, _ = guard()
    assert memory.submit(failing(MemoryLinkError("HTTP 500: boom")))
    assert memory.flush(2.0)
    assert said == ["unavailable (report: MemoryLinkError: HTTP 500: boom)"]
    assert not memory.available and memory.submit(lambda link: None) is False


def test_no_memory_answers_none_and_warns_nothing():
    said: list[str] = []
    memory = MemoryGuard(None, said.append)
    assert memory.ask("suggest", lambda link: {"ok": True}) is None
    assert memory.submit(lambda link: None) is False and said == []
