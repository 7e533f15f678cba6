"""Learning-loop routes: retrieve lessons for an attempt, suggest configurations to try, report
an attempt's outcome.

The hot routes are coroutines that run the service call in the thread pool themselves: a plain
`def` route costs FastAPI a second thread hop to validate the returned model, and every hop is
a hand-over of the interpreter lock that requests in flight compete for.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from starlette.concurrency import run_in_threadpool

from tunemem.memory_service.core.schemas.learning import RetrieveRequest, RetrieveResponse
from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.core.schemas.suggest import SuggestRequest, SuggestResponse
from tunemem.memory_service.http.deps import AgentDep, ServiceDep
from tunemem.memory_service.http.ratelimit import SuggestDep, WriterDep

router = APIRouter(tags=["learning"])


@router.post("/v1/retrieve", response_model=RetrieveResponse)
async def retrieve(body: RetrieveRequest, svc: ServiceDep, who: AgentDep) -> RetrieveResponse:
    """Rank lessons for a task, context and stage by similarity and learned value."""
    return await run_in_threadpool(svc.retrieve, body, tenant=who.tenant)


@router.post("/v1/suggest", response_model=SuggestResponse)
async def suggest(body: SuggestRequest, svc: ServiceDep, who: SuggestDep) -> SuggestResponse:
    """Untried valid configurations of a parameter space, in the memory's order, then search."""
    return await run_in_threadpool(svc.suggest, body, tenant=who.tenant)


@router.post("/v1/outcomes", response_model=ReportResponse)
async def report(
    body: ReportRequest,
    svc: ServiceDep,
    who: WriterDep,
    idempotency_key: Annotated[str | None, Header(min_length=1, max_length=128)] = None,
) -> ReportResponse:
    """Report an attempt's outcome; credited lessons' values are updated."""
    return await run_in_threadpool(
        svc.report, body, idempotency_key=idempotency_key, tenant=who.tenant
    )
