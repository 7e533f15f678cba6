"""The tuners' one policy for an untrusted memory, over `memory_link`: what a failure costs.

`MemoryGuard` holds one tool's requests to the memory (a `MemoryLink`: one deadline per
request, answer included, no retry, a capped answer) and decides what follows each:

- a failure (down, slow, erring, malformed, or an answer the tool judged useless) prints one
  `MemoryUnavailableWarning` line, and the memory is left alone for `RETRY_AFTER_S`: a memory
  that is down costs one deadline, not one per question;
- a 429 is busy, not away: no warning (the tool's `note` hears of it once), and the memory is
  not asked again before its Retry-After (`BUSY_HOLD_S` without one); the reports go on (the
  server caps questions, not writes; a report answered 429 pauses the reporter alone);
- reports and uploads go through one background `Reporter`, dropped while the memory is left
  alone after a failure; `flush` waits for them at most the bound it is given.

The Kernel Tuner strategy, the Triton drop-in and `tunemem tune moe` each keep one guard for a
run; only what they do with an answer is their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from tunemem.agent_client.tuners.memory_link import (
    RETRY_AFTER_S,
    MemoryBusyError,
    MemoryLink,
    Reporter,
    brief,
)

T = TypeVar("T")


class MemoryUnavailableWarning(UserWarning):
    """The memory could not help (unreachable, an error, nothing remembered): the tool's own
    behaviour goes on."""


class MemoryGuard:
    """One tool's requests to the memory under the tuners' policy (see the module).

    Args:
        link: the memory (None: no memory; every question answers None).
        warn: the tool's one warning line, given a message about the memory.
        note: told once that the memory is busy (default: nothing).
        retry_after_s: how long a failed memory is left alone.
    """

    def __init__(
        self,
        link: MemoryLink | None,
        warn: Callable[[str], None],
        *,
        note: Callable[[str], None] | None = None,
        retry_after_s: float = RETRY_AFTER_S,
    ) -> None:
        self.link = link
        self.warn = warn
        self.note = note
        self.retry_after_s = retry_after_s
        self.failures = 0  # failures the guard warned of
        self.busy = 0  # questions answered 429
        self.reporter = Reporter(self._report_failed, retry_after_s=retry_after_s)
        self._held_until = 0.0  # after a failure: neither asked nor sent to
        self._busy_until = 0.0  # after a 429: not asked

    @property
    def available(self) -> bool:
        """Whether there is a memory and it may be asked now (not left alone, not busy)."""
        now = time.monotonic()
        return self.link is not None and now >= max(self._held_until, self._busy_until)

    @property
    def sending(self) -> bool:
        """Whether reports are sent now: there is a memory and it is not left alone after a
        failure (a busy one still takes them)."""
        return self.link is not None and time.monotonic() >= self._held_until

    def ask(self, what: str, call: Callable[[MemoryLink], T]) -> T | None:
        """`call(link)`, or None when the memory is left alone, busy or failed (see the
        module); `what` names the question in the warning."""
        link = self.link
        if link is None or not self.available:
            return None
        try:
            return call(link)
        except MemoryBusyError as exc:  # up but busy: this question is the tool's own
            self.busy += 1
            self._busy_until = max(self._busy_until, time.monotonic() + exc.hold_s)
            if self.busy == 1 and self.note is not None:
                self.note(f"busy (429, {what}); asked again later")
            return None
        except Exception as exc:  # whatever the memory does, the user's tuning goes on
            self.fail(f"unavailable ({what}: {brief(exc)})")
            return None

    def fail(self, message: str) -> None:
        """The memory failed (or answered nothing the tool can use): one warning, then the
        memory is left alone."""
        self.failures += 1
        self._held_until = max(self._held_until, time.monotonic() + self.retry_after_s)
        self.warn(message)

    def submit(self, job: Callable[[MemoryLink], Any]) -> bool:
        """Queue a report or upload for the background; False when it is dropped (no memory,
        or one left alone after a failure)."""
        link = self.link
        if link is None or not self.sending:
            return False
        return self.reporter.submit(lambda: job(link))

    def flush(self, timeout_s: float) -> bool:
        """Wait for the queued reports at most `timeout_s`; True when none is left."""
        return self.reporter.flush(timeout_s)

    def close(self) -> None:
        if self.link is not None:
            self.link.close()

    def _report_failed(self, message: str) -> None:
        """The reporter's one warning (what it sends next is dropped for `retry_after_s`)."""
        self.fail(f"unavailable (report: {self.reporter.error or message})")
