"""Per-key write quota: a token bucket per API key on lesson adds, outcome reports and run
uploads, so one runaway agent cannot flood the shared memory.

Each key may write `per_minute` times in a burst and then `per_minute / 60` times a second;
past that the request gets 429 `rate_limited` with `Retry-After` (seconds until one write is
allowed again) and changes nothing. Buckets live in the worker's memory: with several API
workers the limit holds per worker. Keyless loopback requests (the embedded default, one
local user) are not limited.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Header, Request

from memory_service.core.auth import hash_key
from memory_service.core.errors import ServiceError
from memory_service.http.deps import AgentDep, Caller

MAX_BUCKETS = 100_000


class RateLimited(ServiceError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(max(1, math.ceil(retry_after)))}


class WriteQuota:
    """Token buckets keyed by the hash of a bearer key."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one write of `key`; 0.0 when allowed, else the seconds until one is."""
        now = self.clock()
        with self._lock:
            tokens, stamp = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - stamp) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            if len(self._buckets) >= MAX_BUCKETS and key not in self._buckets:
                # Forget buckets that have refilled: they hold no state worth keeping.
                full = [
                    k
                    for k, (t, s) in self._buckets.items()
                    if t + (now - s) * self.rate >= self.capacity
                ]
                for stale in full:
                    del self._buckets[stale]
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0


def within_write_quota(
    request: Request,
    who: AgentDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Caller:
    """An agent caller, charged one write of its key's quota."""
    quota: WriteQuota | None = getattr(request.app.state, "write_quota", None)
    if quota is not None and authorization:
        wait = quota.take(hash_key(authorization.partition(" ")[2].strip()))
        if wait > 0:
            raise RateLimited(
                f"this key's write quota ({quota.capacity:g} per minute) is spent; "
                f"retry in {math.ceil(wait)} s",
                wait,
            )
    return who


WriterDep = Annotated[Caller, Depends(within_write_quota)]
