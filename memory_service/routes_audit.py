"""HTTP route of the transfer audit: `GET /v1/audit/transfer` as JSON or as an HTML report.

The response models here are the one shape of the audit outside the service: the CLI reads
them from a server (`--url`) or builds them from `memory_service.audit` locally, and the HTML
report renders them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session

from memory_service.audit import TransferAudit, transfer_audit
from memory_service.audit_html import render_report
from memory_service.auth import authenticate, require
from memory_service.service import MemoryService


class _FromAudit(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class LessonPairValuePublic(_FromAudit):
    lesson_id: str
    source_q: float = Field(description="observed value (Q) on the source")
    source_n: int = Field(description="outcomes on the source")
    target_q: float
    target_n: int


class OptimumReachPublic(_FromAudit):
    lesson_id: str
    target_trajectory: str
    target_chip: str
    fraction: float = Field(description="target optimum latency / this config's latency there")
    latency_ms: float | None = Field(description="the config on the target; null: infeasible")
    optimum_ms: float | None


class PairOptimumPublic(_FromAudit):
    n_lessons: int
    n_spaces: int = Field(description="recorded target search spaces the configs were tried on")
    mean_fraction: float
    best_fraction: float
    reaches: list[OptimumReachPublic]


class TransferPairPublic(_FromAudit):
    source: str
    target: str
    n_common: int = Field(description="lessons with outcomes on both")
    spearman: float | None = Field(description="rank correlation of values; null: undefined")
    sign_agreement: float | None = Field(description="share of common lessons both judge alike")
    mean_source: float | None
    mean_target: float | None
    common: list[LessonPairValuePublic]
    helped_source_hurt_target: list[LessonPairValuePublic]
    helped_both: list[str]
    optimum: PairOptimumPublic | None


class LessonBriefPublic(_FromAudit):
    id: str
    kind: str
    text: str
    op: str
    origin: str | None = Field(description="the chip or backend the lesson was learned on")
    config: dict[str, Any] | None


class TransferAuditPublic(_FromAudit):
    """The transfer matrix: every ordered pair of scopes, and the lessons it mentions."""

    level: Literal["chip", "backend"]
    stage: Literal["draft", "refine"]
    op: str | None
    scopes: list[str]
    neutral: float = Field(description="the value above which a lesson helped (Q0)")
    min_n: int
    pairs: list[TransferPairPublic]
    lessons: dict[str, LessonBriefPublic]

    def pair(self, source: str, target: str) -> TransferPairPublic:
        for item in self.pairs:
            if item.source == source and item.target == target:
                return item
        raise KeyError(f"no pair {source} -> {target} in the audit")


def public_audit(audit: TransferAudit) -> TransferAuditPublic:
    return TransferAuditPublic.model_validate(audit)


def _service(request: Request) -> MemoryService:
    return request.app.state.service  # type: ignore[no-any-return]


def _reader_tenant(
    request: Request,
    svc: Annotated[MemoryService, Depends(_service)],
    authorization: Annotated[str | None, Header()] = None,
) -> str:
    """The caller's tenant; the audit needs the reader role. (Built on `memory_service.auth`
    rather than on api.py's dependency so that api.py can import this router.)"""
    host = request.client.host if request.client else None
    with Session(svc.engine) as session:
        tenant, granted = authenticate(session, authorization, host, svc.settings.tenant)
    require("reader", granted)
    return tenant


router = APIRouter(tags=["audit"])


@router.get(
    "/v1/audit/transfer",
    response_model=TransferAuditPublic,
    responses={
        200: {"content": {"text/html": {}}, "description": "JSON, or HTML with format=html"}
    },
)
def audit_transfer(
    svc: Annotated[MemoryService, Depends(_service)],
    tenant: Annotated[str, Depends(_reader_tenant)],
    level: Annotated[Literal["chip", "backend"] | None, Query()] = None,
    chips: Annotated[str | None, Query(description="comma list of chips")] = None,
    backends: Annotated[str | None, Query(description="comma list of backends")] = None,
    op: Annotated[str | None, Query(description="operator family")] = None,
    stage: Annotated[Literal["draft", "refine"], Query()] = "draft",
    min_n: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    format: Annotated[Literal["json", "html"], Query()] = "json",
) -> Any:
    """Which lessons transfer across chips or backends: values, rank correlation, optimum reach."""
    chosen = level or ("backend" if backends and not chips else "chip")
    audit = public_audit(
        transfer_audit(
            svc,
            level=chosen,
            chips=chips,
            backends=backends,
            op=op,
            stage=stage,
            min_n=min_n,
            tenant=tenant,
        )
    )
    if format == "html":
        return HTMLResponse(render_report(audit))
    return audit
