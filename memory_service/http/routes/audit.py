"""Audit route: `GET /v1/audit/transfer`, the transfer matrix as JSON or as an HTML report."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from memory_service.core.errors import InvalidInput
from memory_service.core.schemas.audit import TransferAuditPublic
from memory_service.http.audit_html import render_report
from memory_service.http.deps import ReaderDep, ServiceDep
from retrieval.toolchain import parse_toolchain

router = APIRouter(tags=["audit"])


@router.get(
    "/v1/audit/transfer",
    response_model=TransferAuditPublic,
    responses={
        200: {"content": {"text/html": {}}, "description": "JSON, or HTML with format=html"}
    },
)
def audit_transfer(
    svc: ServiceDep,
    who: ReaderDep,
    level: Annotated[Literal["chip", "backend"] | None, Query()] = None,
    chips: Annotated[str | None, Query(description="comma list of chips")] = None,
    backends: Annotated[str | None, Query(description="comma list of backends")] = None,
    op: Annotated[str | None, Query(description="operator family")] = None,
    stage: Annotated[Literal["draft", "refine"], Query()] = "draft",
    min_n: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    toolchain: Annotated[
        list[str] | None,
        Query(description="cut by toolchain: component=version (repeatable), e.g. triton=3.6"),
    ] = None,
    format: Annotated[Literal["json", "html"], Query()] = "json",
) -> Any:
    """Which lessons transfer across chips or backends: values, rank correlation, optimum reach."""
    chosen = level or ("backend" if backends and not chips else "chip")
    try:
        cut = parse_toolchain(toolchain or [])
    except ValueError as exc:
        raise InvalidInput(str(exc), code="invalid_toolchain") from exc
    audit = svc.audit_transfer(
        level=chosen,
        chips=chips,
        backends=backends,
        op=op,
        stage=stage,
        min_n=min_n,
        toolchain=cut or None,
        tenant=who.tenant,
    )
    if format == "html":
        return HTMLResponse(render_report(audit))
    return audit
