"""The one HTTP client of the memory API, in a sync and an async flavour.

Transient failures (connection errors, timeouts, 408/425/429/5xx answers) are retried by
tenacity with exponential backoff and full jitter. Every report carries an `Idempotency-Key`
that stays the same across the retries of one call (and that callers may fix themselves, as the
agent does per attempt), so a report whose answer was lost is counted once by the service.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from tunemem.agent_client.models import (
    MemoryAPIError,
    Outcome,
    OutcomeReceipt,
    Retrieval,
    ServiceWarning,
    Stage,
    TransientAPIError,
)

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


def _retrieval(data: dict[str, Any]) -> Retrieval:
    """The parsed answer; each of its warnings is also raised as a `ServiceWarning`, so a
    caller that never reads `Retrieval.warnings` (an agent, a script) still sees it once."""
    retrieval = Retrieval.from_json(data)
    for text in retrieval.warnings:
        warnings.warn(text, ServiceWarning, stacklevel=3)
    return retrieval


def _retrieve_body(
    task: dict[str, Any],
    context: dict[str, Any],
    stage: Stage,
    k: int,
    query: str | None,
    options: dict[str, Any] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"task": task, "context": context, "stage": stage, "k": k}
    if query is not None:
        body["query"] = query
    if options:
        body["options"] = options
    return body


def _suggest_body(
    task: dict[str, Any],
    context: dict[str, Any],
    space: dict[str, Any],
    observations: Iterable[dict[str, Any]] | None,
    k: int,
    stage: Stage | None,
    options: dict[str, Any] | None,
    seed: int | None,
) -> dict[str, Any]:
    if "params" not in space:
        space = {"params": space}
    body: dict[str, Any] = {
        "task": task,
        "context": context,
        "space": space,
        "observations": list(observations or ()),
        "k": k,
        "stage": stage,
        "seed": seed,
    }
    if options:
        body["options"] = options
    return body


def _report_request(
    retrieval_id: str, outcome: Outcome, used: list[str] | None, idempotency_key: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    body = {"retrieval_id": retrieval_id, "used": used, "outcome": outcome.to_json()}
    return body, {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


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
            headers=_headers(api_key),
            timeout=timeout_s,
            transport=transport,
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        for attempt in Retrying(**self.retry.tenacity_kwargs()):
            with attempt:
                return _raise_for(self._http.request(method, path, **kwargs))
        raise AssertionError("unreachable: tenacity reraises")

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/healthz")

    def retrieve(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        stage: Stage = "draft",
        k: int = 3,
        query: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Retrieval:
        body = _retrieve_body(task, context, stage, k, query, options)
        return _retrieval(self._call("POST", "/v1/retrieve", json=body))

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
        """Up to k untried configurations of `space` ({"params": {name: [values]}, "valid":
        [...] | None}, or the params alone), in the memory's order (POST /v1/suggest).
        Report each one's outcome with the answer's `retrieval_id` and its lessons' ids."""
        body = _suggest_body(task, context, space, observations, k, stage, options, seed)
        return self._call("POST", "/v1/suggest", json=body)

    def report(
        self,
        retrieval_id: str,
        outcome: Outcome,
        used: list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> OutcomeReceipt:
        body, headers = _report_request(retrieval_id, outcome, used, idempotency_key)
        return OutcomeReceipt.from_json(
            self._call("POST", "/v1/outcomes", json=body, headers=headers)
        )

    def add_lessons(self, lessons: Iterable[dict[str, Any]]) -> dict[str, Any]:
        return self._call("POST", "/v1/lessons", json={"lessons": list(lessons)})

    def upload_trajectories(self, trajectories: Iterable[dict[str, Any]]) -> dict[str, Any]:
        return self._call("POST", "/v1/trajectories", json={"trajectories": list(trajectories)})

    def list_lessons(self, **filters: Any) -> dict[str, Any]:
        params = {k: v for k, v in filters.items() if v is not None}
        return self._call("GET", "/v1/lessons", params=params)

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
            headers=_headers(api_key),
            timeout=timeout_s,
            transport=transport,
        )

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        async for attempt in AsyncRetrying(**self.retry.tenacity_kwargs()):
            with attempt:
                return _raise_for(await self._http.request(method, path, **kwargs))
        raise AssertionError("unreachable: tenacity reraises")

    async def health(self) -> dict[str, Any]:
        return await self._call("GET", "/healthz")

    async def retrieve(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        stage: Stage = "draft",
        k: int = 3,
        query: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Retrieval:
        body = _retrieve_body(task, context, stage, k, query, options)
        return _retrieval(await self._call("POST", "/v1/retrieve", json=body))

    async def suggest(
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
        """Up to k untried configurations of `space`, in the memory's order (see
        `MemoryClient.suggest`)."""
        body = _suggest_body(task, context, space, observations, k, stage, options, seed)
        return await self._call("POST", "/v1/suggest", json=body)

    async def report(
        self,
        retrieval_id: str,
        outcome: Outcome,
        used: list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> OutcomeReceipt:
        body, headers = _report_request(retrieval_id, outcome, used, idempotency_key)
        return OutcomeReceipt.from_json(
            await self._call("POST", "/v1/outcomes", json=body, headers=headers)
        )

    async def add_lessons(self, lessons: Iterable[dict[str, Any]]) -> dict[str, Any]:
        return await self._call("POST", "/v1/lessons", json={"lessons": list(lessons)})

    async def upload_trajectories(self, trajectories: Iterable[dict[str, Any]]) -> dict[str, Any]:
        return await self._call(
            "POST", "/v1/trajectories", json={"trajectories": list(trajectories)}
        )

    async def list_lessons(self, **filters: Any) -> dict[str, Any]:
        params = {k: v for k, v in filters.items() if v is not None}
        return await self._call("GET", "/v1/lessons", params=params)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
