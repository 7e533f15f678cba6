"""Per-key write quota: a token bucket per API key on lesson adds, outcome reports and run
uploads, so one runaway agent cannot flood the shared memory.

Each key may write `per_minute` times in a burst and then `per_minute / 60` times a second;
past that the request gets 429 `rate_limited` with `Retry-After` (seconds until one write is
allowed again) and changes nothing. The buckets are rows of the SQL store
(`memory_service.core.access.quota`), so the limit holds across all the API workers of one store.
Keyless loopback requests (the embedded default, one local user) are not limited.

Suggest is capped by concurrency instead: one server process computes at most
`suggest_concurrency` suggests at once (each bounded by `suggest_deadline_s`), one tenant at
most `suggest_per_tenant` of them; one more gets 429 `busy` with `Retry-After: 1` at once, so a
flood of expensive suggests costs the server that many threads, never all of them, and one
tenant's flood leaves the other tenants their slots.
"""

from __future__ import annotations

import math
import threading
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Request
from starlette.concurrency import run_in_threadpool

from tunemem.memory_service.core.access.keys import hash_key
from tunemem.memory_service.core.access.quota import SharedWriteQuota
from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.http.deps import AgentDep, Caller


class RateLimited(ServiceError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(max(1, math.ceil(retry_after)))}


async def within_write_quota(
    request: Request,
    who: AgentDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Caller:
    """An agent caller, charged one write of its key's quota.

    A coroutine that goes to the thread pool only to charge a key (the buckets are SQL rows):
    a keyless caller costs no thread hop."""
    quota: SharedWriteQuota | None = getattr(request.app.state, "write_quota", None)
    if quota is not None and authorization:
        wait = await run_in_threadpool(
            quota.take, hash_key(authorization.partition(" ")[2].strip())
        )
        if wait > 0:
            raise RateLimited(
                f"this key's write quota ({quota.capacity:g} per minute) is spent; "
                f"retry in {math.ceil(wait)} s",
                wait,
            )
    return who


WriterDep = Annotated[Caller, Depends(within_write_quota)]


class SuggestBusy(RateLimited):
    code = "busy"


class SuggestSlots:
    """The process's suggest slots: `total` at once, at most `per_tenant` of them per tenant."""

    def __init__(self, total: int, per_tenant: int) -> None:
        self.total = total
        self.per_tenant = max(1, min(per_tenant, total))
        self.held: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, tenant: str) -> str | None:
        """Take a slot for `tenant`; None when taken, else why not."""
        with self._lock:
            mine = self.held.get(tenant, 0)
            if mine >= self.per_tenant:
                return f"this tenant already has {mine} suggests running, as many as it may"
            if sum(self.held.values()) >= self.total:
                return "the server is computing as many suggests as it allows"
            self.held[tenant] = mine + 1
        return None

    def release(self, tenant: str) -> None:
        with self._lock:
            left = self.held.get(tenant, 0) - 1
            if left > 0:
                self.held[tenant] = left
            else:
                self.held.pop(tenant, None)


async def suggest_slot(request: Request, who: AgentDep) -> AsyncIterator[Caller]:
    """An agent caller holding one of its tenant's suggest slots while its request runs."""
    slots: SuggestSlots | None = getattr(request.app.state, "suggest_slots", None)
    if slots is None:
        yield who
        return
    refused = slots.acquire(who.tenant)
    if refused:
        raise SuggestBusy(f"{refused}; retry", 1.0)
    try:
        yield who
    finally:
        slots.release(who.tenant)


SuggestDep = Annotated[Caller, Depends(suggest_slot)]
