"""Learning-loop routes: retrieve lessons for an attempt, suggest configurations to try, report
an attempt's outcome."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header

from memory_service.core.models import (
    ReportRequest,
    ReportResponse,
    RetrieveRequest,
    RetrieveResponse,
)
from memory_service.core.suggest_models import SuggestRequest, SuggestResponse
from memory_service.http.deps import AgentDep, ServiceDep
from memory_service.http.ratelimit import WriterDep

router = APIRouter(tags=["learning"])


@router.post("/v1/retrieve", response_model=RetrieveResponse)
def retrieve(body: RetrieveRequest, svc: ServiceDep, who: AgentDep) -> RetrieveResponse:
    """Rank lessons for a task, context and stage by similarity and learned value."""
    return svc.retrieve(body, tenant=who.tenant)


@router.post("/v1/suggest", response_model=SuggestResponse)
def suggest(body: SuggestRequest, svc: ServiceDep, who: AgentDep) -> SuggestResponse:
    """Untried valid configurations of a parameter space, in the memory's order, then search."""
    return svc.suggest(body, tenant=who.tenant)


@router.post("/v1/outcomes", response_model=ReportResponse)
def report(
    body: ReportRequest,
    svc: ServiceDep,
    who: WriterDep,
    idempotency_key: Annotated[str | None, Header(min_length=1, max_length=128)] = None,
) -> ReportResponse:
    """Report an attempt's outcome; credited lessons' values are updated."""
    return svc.report(body, idempotency_key=idempotency_key, tenant=who.tenant)
