"""HTTP dependencies, declared once: the service of the app and the caller's key and role.

Routes take `ServiceDep` and one of `ReaderDep`, `AgentDep`, `AdminDep` (by `Annotated`), so
tests can swap them with `app.dependency_overrides`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request

from memory_service.core.access.keys import require
from memory_service.service import MemoryService


def get_service(request: Request) -> MemoryService:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[MemoryService, Depends(get_service)]


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant of their key and the role it grants."""

    tenant: str
    role: str


def needs(role: str) -> Callable[..., Caller]:
    """A dependency that authenticates the request and checks its role."""

    def dependency(
        request: Request,
        svc: ServiceDep,
        authorization: Annotated[str | None, Header()] = None,
    ) -> Caller:
        host = request.client.host if request.client else None
        tenant, granted = svc.authenticate(authorization, host)
        require(role, granted)
        return Caller(tenant, granted)

    return dependency


ReaderDep = Annotated[Caller, Depends(needs("reader"))]
AgentDep = Annotated[Caller, Depends(needs("agent"))]
AdminDep = Annotated[Caller, Depends(needs("admin"))]
