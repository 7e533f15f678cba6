"""The agent's HTTP client of the memory API, in a sync and an async flavour.

Both are built from one table, `calls.CALLS`: each method is a call's function (its request
and how its answer is read, written once), sent the flavour's way. Transient failures
(connection errors, timeouts, 408/425/429/5xx answers) are retried by tenacity with exponential
backoff and full jitter; a report's `Idempotency-Key` (fresh, or fixed by the caller, as the
agent does per attempt) stays the same across the retries of one call, so a report whose answer
was lost is counted once by the service.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar, get_args, get_type_hints

import httpx
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

import tunemem.agent_client.calls as calls
from tunemem import wire
from tunemem.agent_client.models import MemoryAPIError, TransientAPIError

TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_RETRYABLE = (httpx.TransportError, TransientAPIError)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to retry: attempts in all, and the backoff's base and cap in seconds."""

    attempts: int = 5
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0

    def tenacity_kwargs(self) -> dict[str, Any]:
        return {
            "retry": retry_if_exception_type(_RETRYABLE),
            "wait": wait_random_exponential(multiplier=self.backoff_s, max=self.max_backoff_s),
            "stop": stop_after_attempt(self.attempts),
            "reraise": True,
        }


def _raise_for(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json() if response.content else {}
    except ValueError:
        body = {"message": response.text[:200]}
    if response.status_code < 400:
        if not isinstance(body, dict):
            raise MemoryAPIError(response.status_code, "bad_response", "expected a JSON object")
        return body
    detail = body.get("detail", body) if isinstance(body, dict) else body
    if isinstance(detail, dict):
        code = str(detail.get("code") or response.reason_phrase or "error")
        message = str(detail.get("message") or detail)
    else:
        code, message = (response.reason_phrase or "error"), str(detail)
    error = TransientAPIError if response.status_code in TRANSIENT_STATUS else MemoryAPIError
    raise error(response.status_code, code, message)


P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _sync(call: Callable[P, calls.Call[T]]) -> Callable[Concatenate[MemoryClient, P], T]:
    """`call` as a method of `MemoryClient`: built, sent (with retries) and read."""

    def method(self: MemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        made = call(*args, **kwargs)
        request = made.request
        return made.read(self._call(request.method, request.path, **request.options()))

    return _as_method(method, call, "MemoryClient")


def _async(
    call: Callable[P, calls.Call[T]],
) -> Callable[Concatenate[AsyncMemoryClient, P], Coroutine[Any, Any, T]]:
    """`call` as a method of `AsyncMemoryClient`: built, sent (with retries) and read."""

    async def method(self: AsyncMemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        made = call(*args, **kwargs)
        request = made.request
        return made.read(await self._call(request.method, request.path, **request.options()))

    return _as_method(method, call, "AsyncMemoryClient")


def _as_method(method: F, call: Callable[..., Any], owner: str) -> F:
    """`method` named and documented as `call`, with `call`'s signature after `self` and the
    type its answer is read into (`T` of its `Call[T]`) as the method's return."""
    signature = inspect.signature(call)
    (answer,) = get_args(get_type_hints(call)["return"])
    self_ = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__name__ = call.__name__
    method.__qualname__ = f"{owner}.{call.__name__}"
    method.__doc__ = call.__doc__
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self_, *signature.parameters.values()], return_annotation=answer
    )
    return method


class MemoryClient:
    """Synchronous client of the memory API."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=wire.bearer(api_key),
            timeout=timeout_s,
            transport=transport,
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        for attempt in Retrying(**self.retry.tenacity_kwargs()):
            with attempt:
                return _raise_for(self._http.request(method, path, **kwargs))
        raise AssertionError("unreachable: tenacity reraises")

    health = _sync(calls.health)
    retrieve = _sync(calls.retrieve)
    suggest = _sync(calls.suggest)
    report = _sync(calls.report)
    add_lessons = _sync(calls.add_lessons)
    upload_trajectories = _sync(calls.upload_trajectories)
    list_lessons = _sync(calls.list_lessons)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemoryClient:
    """Asynchronous client of the memory API (same methods, awaitable)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=wire.bearer(api_key),
            timeout=timeout_s,
            transport=transport,
        )

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        async for attempt in AsyncRetrying(**self.retry.tenacity_kwargs()):
            with attempt:
                return _raise_for(await self._http.request(method, path, **kwargs))
        raise AssertionError("unreachable: tenacity reraises")

    health = _async(calls.health)
    retrieve = _async(calls.retrieve)
    suggest = _async(calls.suggest)
    report = _async(calls.report)
    add_lessons = _async(calls.add_lessons)
    upload_trajectories = _async(calls.upload_trajectories)
    list_lessons = _async(calls.list_lessons)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
