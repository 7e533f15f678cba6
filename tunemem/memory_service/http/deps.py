"""HTTP dependencies, declared once: the service of the app and the caller's key and role.

Routes take `ServiceDep` and one of `ReaderDep`, `AgentDep`, `AdminDep` (by `Annotated`), or
`AnyoneDep` where a caller without a key is answered too, so tests can swap them with
`app.dependency_overrides`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request

from tunemem.memory_service.core.access.keys import require
from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.service import MemoryService


def get_service(request: Request) -> MemoryService:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[MemoryService, Depends(get_service)]


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant of their key and the role it grants."""

    tenant: str
    role: str


def authenticated(
    request: Request,
    svc: ServiceDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Caller:
    """The caller of the request's key (or of a keyless store), or Unauthorized."""
    host = request.client.host if request.client else None
    tenant, granted = svc.authenticate(authorization, host)
    return Caller(tenant, granted)


def needs(role: str) -> Callable[..., Caller]:
    """A dependency that authenticates the request and checks its role."""

    def dependency(who: Annotated[Caller, Depends(authenticated)]) -> Caller:
        require(role, who.role)
        return who

    return dependency


def caller_if_any(
    request: Request,
    svc: ServiceDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Caller | None:
    """The caller when the request authenticates, else None: for a route that answers anyone
    and tells a caller more (`/healthz`)."""
    try:
        return authenticated(request, svc, authorization)
    except ServiceError:
        return None


ReaderDep = Annotated[Caller, Depends(needs("reader"))]
AgentDep = Annotated[Caller, Depends(needs("agent"))]
AdminDep = Annotated[Caller, Depends(needs("admin"))]
AnyoneDep = Annotated[Caller | None, Depends(caller_if_any)]
