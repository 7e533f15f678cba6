"""The requests of the memory's v1 HTTP API that more than one client sends: each call's
method, path, body, query and headers, written once.

The agent's calls (`agent_client.calls`, from which the sync and async `MemoryClient` and the
tuners' `MemoryLink` are built) and the CLI's and MCP's `memory_service.remote.RemoteService`
build these requests here; they differ only in how they send one (retries, one deadline, the
error they raise) and in the objects they read its answer into. A call only `RemoteService`
makes (the admin and single-lesson routes) is written there. Pure: no network, files or clock
(import-linter holds it to that), on the lowest floor, so every package may import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class Request:
    """One request of the API: what a client sends, and nothing of how.

    `json` is the body (None: none), `params` the query."""

    method: Literal["GET", "POST"]
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of an HTTP client's `request(method, path, ...)` (httpx's)."""
        options: dict[str, Any] = {}
        if self.json is not None:
            options["json"] = self.json
        if self.params is not None:
            options["params"] = dict(self.params)
        if self.headers:
            options["headers"] = dict(self.headers)
        return options


def bearer(api_key: str | None) -> dict[str, str]:
    """The headers that carry an API key with every request (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def health() -> Request:
    return Request("GET", "/healthz")


def retrieve(
    task: Mapping[str, Any],
    context: Mapping[str, Any],
    stage: str = "draft",
    k: int | None = 3,
    query: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Request:
    """POST /v1/retrieve; `query` and `options` are left out when not given."""
    body: dict[str, Any] = {"task": task, "context": context, "stage": stage, "k": k}
    if query is not None:
        body["query"] = query
    if options:
        body["options"] = options
    return Request("POST", "/v1/retrieve", json=body)


def suggest(
    task: Mapping[str, Any],
    context: Mapping[str, Any],
    space: Mapping[str, Any],
    observations: Iterable[Mapping[str, Any]] | None = None,
    k: int = 5,
    stage: str | None = None,
    options: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> Request:
    """POST /v1/suggest; a `space` without "params" is taken as the params alone."""
    body: dict[str, Any] = {
        "task": task,
        "context": context,
        "space": space if "params" in space else {"params": space},
        "observations": list(observations or ()),
        "k": k,
        "stage": stage,
        "seed": seed,
    }
    if options:
        body["options"] = options
    return Request("POST", "/v1/suggest", json=body)


def report(
    retrieval_id: str,
    outcome: Mapping[str, Any],
    used: list[str] | None = None,
    reporter: str | None = None,
    idempotency_key: str | None = None,
) -> Request:
    """POST /v1/outcomes with the outcome's JSON; the key, when given, in its header."""
    body: dict[str, Any] = {"retrieval_id": retrieval_id, "used": used, "outcome": outcome}
    if reporter is not None:
        body["reporter"] = reporter
    headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else {}
    return Request("POST", "/v1/outcomes", json=body, headers=headers)


def upload_trajectories(trajectories: Iterable[Mapping[str, Any]]) -> Request:
    return Request("POST", "/v1/trajectories", json={"trajectories": list(trajectories)})


def add_lessons(lessons: Iterable[Mapping[str, Any]]) -> Request:
    return Request("POST", "/v1/lessons", json={"lessons": list(lessons)})


def list_lessons(**filters: Any) -> Request:
    """GET /v1/lessons with the filters that are not None."""
    return Request("GET", "/v1/lessons", params={k: v for k, v in filters.items() if v is not None})
