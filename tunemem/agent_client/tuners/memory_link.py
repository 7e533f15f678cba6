"""The tuner integrations' way to the memory, shared by the Kernel Tuner strategy and the Triton
drop-in: the memory is untrusted, and nothing it does may cost the user's tuning more than one
bounded wait and one warning.

- `MemoryLink` sends one request at a time (the clients' own, built by `agent_client.calls`)
  under one deadline for the whole request (connect, headers and every byte of the answer: a
  memory that trickles one byte a second is cut at the deadline, not at each read), with no
  retry, and refuses an answer past `max_answer_bytes` before it is held in memory. Every
  failure is one `MemoryLinkError`; a memory that answers 429 (its slots for this tenant are
  taken) raises `MemoryBusyError`, a kind of it that means "busy, ask again later", not "away".
- `Reporter` sends outcome reports and run uploads on one background thread, from a bounded
  queue; a failure is one warning, and what comes in the next `RETRY_AFTER_S` is dropped (a
  memory that failed is left alone that long, so a down memory costs one deadline, not one per
  report); a busy one (429) is left alone for its Retry-After, without a warning, its dropped
  reports counted in `busy`; `flush` waits at most its bound.
- `memory_answers.usable_suggestions` reads a suggest answer as untrusted data.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

import tunemem.agent_client.calls as calls
from tunemem import wire
from tunemem.agent_client.models import Outcome, Stage

# A suggest answer of 100 configurations with their predictions is tens of kilobytes; past this
# it is not an answer.
MAX_ANSWER_BYTES = 4 * 1024 * 1024
# Reports queued for the background thread, at most; past this they are dropped (counted).
MAX_PENDING_REPORTS = 10_000
# After a failed call the memory is left alone this long.
RETRY_AFTER_S = 300.0
# After a 429 without a Retry-After, a busy memory is left alone this long (it is up).
BUSY_HOLD_S = 10.0


class MemoryLinkError(RuntimeError):
    """The memory did not give a usable answer in time (down, slow, erring or malformed)."""


class MemoryBusyError(MemoryLinkError):
    """The memory answered 429: it is up but busy; a later request may be served
    (`retry_after_s`: what its Retry-After header said, when it said a number)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    @property
    def hold_s(self) -> float:
        """How long to leave the memory unasked: its Retry-After (0: at once), else
        `BUSY_HOLD_S`."""
        return BUSY_HOLD_S if self.retry_after_s is None else self.retry_after_s


class MemoryLink:
    """Requests to the memory, each bounded by one deadline, never retried.

    Args:
        url: the memory service's address.
        api_key: a key with the agent role, when the server checks keys.
        timeout_s: the deadline of one whole request, answer included.
        max_answer_bytes: the largest answer read; a larger one is a failure.
        client: an object with `MemoryClient`'s `suggest`, `report` and `upload_trajectories`
            (tests, or a shared client); its calls are bounded by the same deadline.
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 5.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        client: Any | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s!r}")
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes
        self.client = client
        self._http = httpx.Client(
            base_url=self.url, headers=wire.bearer(api_key), timeout=timeout_s
        )

    # -- the API calls the tuners make ----------------------------------------------------

    def suggest(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        space: dict[str, Any],
        observations: Iterable[dict[str, Any]] | None = None,
        k: int = 5,
        stage: Stage | None = None,
        options: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """POST /v1/suggest; the answer as a JSON object (its contents unchecked)."""
        client = self.client
        if client is not None:
            return self._bounded(
                lambda: client.suggest(
                    task,
                    context,
                    space,
                    observations=observations,
                    k=k,
                    stage=stage,
                    options=options,
                    seed=seed,
                )
            )
        call = calls.suggest(task, context, space, observations, k, stage, options, seed)
        return self.send(call.request)

    def report(self, retrieval_id: str, outcome: Outcome, used: list[str] | None = None) -> Any:
        """POST /v1/outcomes, with an idempotency key of its own."""
        client = self.client
        if client is not None:
            return self._bounded(lambda: client.report(retrieval_id, outcome, used=used))
        return self.send(calls.report(retrieval_id, outcome, used).request)

    def upload_trajectories(self, trajectories: Iterable[dict[str, Any]]) -> Any:
        """POST /v1/trajectories."""
        runs = list(trajectories)
        client = self.client
        if client is not None:
            return self._bounded(lambda: client.upload_trajectories(runs))
        return self.send(calls.upload_trajectories(runs).request)

    def list_lessons(self, **filters: Any) -> dict[str, Any]:
        """GET /v1/lessons with the given filters (None ones left out); the answer unchecked."""
        params = {k: v for k, v in filters.items() if v is not None}
        client = self.client
        if client is not None:
            return self._bounded(lambda: client.list_lessons(**params))
        return self.send(calls.list_lessons(**params).request)

    def close(self) -> None:
        self._http.close()

    # -- one bounded request ------------------------------------------------------------

    def post(
        self, path: str, body: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """POST `body` and return the answer's JSON object, all within `timeout_s`."""
        return self.send(wire.Request("POST", path, json=body, headers=dict(headers or {})))

    def send(self, request: wire.Request) -> dict[str, Any]:
        """Send `request` and return the answer's JSON object, all within `timeout_s`."""
        deadline = time.monotonic() + self.timeout_s
        return self._bounded(lambda: self._exchange(request, deadline))

    def _bounded(self, call: Callable[[], Any]) -> Any:
        """Run `call` on a worker thread and wait for it at most `timeout_s`: the user's
        thread never waits longer, whatever the socket does (the worker ends on its own at
        the deadline, at its next byte or its read timeout)."""
        outcome: list[Any] = []

        def work() -> None:
            try:
                outcome.append((True, call()))
            except BaseException as exc:  # handed to the caller's thread below
                outcome.append((False, exc))

        worker = threading.Thread(target=work, name="tunemem-link", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if not outcome:
            raise MemoryLinkError(f"no answer within {self.timeout_s:g} s")
        ok, value = outcome[0]
        if ok:
            return value
        if isinstance(value, MemoryLinkError):
            raise value
        raise MemoryLinkError(f"{type(value).__name__}: {value}") from value

    def _exchange(self, request: wire.Request, deadline: float) -> dict[str, Any]:
        with self._http.stream(request.method, request.path, **request.options()) as response:
            if response.status_code == 429:
                raise MemoryBusyError(
                    "the memory is busy (HTTP 429)", _seconds(response.headers.get("retry-after"))
                )
            length = response.headers.get("content-length")
            if length and length.isdigit() and int(length) > self.max_answer_bytes:
                raise MemoryLinkError(f"an answer of {int(length):,} bytes is too large")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_answer_bytes:
                    raise MemoryLinkError(
                        f"the answer passed {self.max_answer_bytes:,} bytes; not read further"
                    )
                if time.monotonic() > deadline:
                    raise MemoryLinkError(f"the answer took longer than {self.timeout_s:g} s")
                chunks.append(chunk)
            status = response.status_code
        raw = b"".join(chunks)
        if status >= 400:
            raise MemoryLinkError(f"HTTP {status}: {raw[:200].decode('utf-8', 'replace')}")
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise MemoryLinkError(f"the answer is not JSON ({exc})") from exc
        if not isinstance(answer, dict):
            raise MemoryLinkError("the answer is not a JSON object")
        return answer


def _seconds(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and 0 <= value <= 3600 else None


@dataclass
class Reporter:
    """Reports and uploads, sent in the background of the user's loop (see the module).

    Args:
        warn: called with a one-line message on a failure (once: what follows is dropped).
        max_pending: the queue's bound; a job past it is dropped and counted.
        retry_after_s: how long after a failure jobs are dropped unsent.
    """

    warn: Callable[[str], None]
    max_pending: int = MAX_PENDING_REPORTS
    retry_after_s: float = RETRY_AFTER_S
    sent: int = 0
    dropped: int = 0
    busy: int = 0
    error: str | None = None
    _failed_at: float = field(default=-math.inf, repr=False)
    _hold_s: float = field(default=0.0, repr=False)
    _jobs: queue.Queue[Callable[[], Any]] = field(default_factory=queue.Queue, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def failed(self) -> bool:
        """Whether a failure is recent enough that jobs are dropped."""
        return time.monotonic() < self._failed_at + self._hold_s

    def submit(self, job: Callable[[], Any]) -> bool:
        """Queue one job (a call through a `MemoryLink`); False when it is dropped."""
        with self._lock:
            if self.failed or self._jobs.qsize() >= self.max_pending:
                self.dropped += 1
                return False
            self._jobs.put(job)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._drain, name="tunemem-report", daemon=True
                )
                self._thread.start()
        return True

    def _drain(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=0.5)
            except queue.Empty:
                with self._lock:  # submit() starts a new thread once this one is gone
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            try:
                if not self.failed:
                    job()
                    self.sent += 1
                else:
                    self.dropped += 1
            except MemoryBusyError as exc:  # up but busy: a pause, not a failure
                self.busy += 1
                self._hold_s = exc.hold_s
                self._failed_at = time.monotonic()
            except Exception as exc:  # a report that fails must never reach the user's loop
                self.error = brief(exc)
                self._hold_s = self.retry_after_s
                self._failed_at = time.monotonic()
                self.warn(f"reporting to the memory failed ({self.error})")
            finally:
                self._jobs.task_done()

    def flush(self, timeout_s: float) -> bool:
        """Wait for the queued jobs, at most `timeout_s`; True when none is left."""
        deadline = time.monotonic() + timeout_s
        while self._jobs.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._jobs.unfinished_tasks


def brief(exc: BaseException) -> str:
    """An exception in one short line."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200]
