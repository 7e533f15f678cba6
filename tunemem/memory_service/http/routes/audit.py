"""Audit route: `GET /v1/audit/transfer`, the transfer matrix as JSON or as an HTML report."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from tunemem.memory_service.core.schemas.audit import TransferAuditPublic, TransferQuery
from tunemem.memory_service.http.audit_advice import store_option
from tunemem.memory_service.http.audit_html import render_report
from tunemem.memory_service.http.deps import ReaderDep, ServiceDep

router = APIRouter(tags=["audit"])


@router.get(
    "/v1/audit/transfer",
    response_model=TransferAuditPublic,
    responses={
        200: {"content": {"text/html": {}}, "description": "JSON, or HTML with format=html"}
    },
)
def audit_transfer(
    request: Request,
    svc: ServiceDep,
    who: ReaderDep,
    query: Annotated[TransferQuery, Query()],
    format: Annotated[Literal["json", "html"], Query()] = "json",
) -> Any:
    """Which lessons transfer across chips or backends: values, rank correlation, optimum reach."""
    audit = svc.audit_transfer(query, tenant=who.tenant)
    if format == "html":
        return HTMLResponse(render_report(audit, store=store_option(url=str(request.base_url))))
    return audit
