"""Trajectory route: upload whole runs in the native format; lessons are distilled from them."""

from __future__ import annotations

from fastapi import APIRouter

from tunemem.memory_service.core.schemas.ingest import IngestSummary, TrajectoriesIn
from tunemem.memory_service.http.deps import ServiceDep
from tunemem.memory_service.http.ratelimit import WriterDep

router = APIRouter(tags=["trajectories"])


@router.post("/v1/trajectories", status_code=201, response_model=IngestSummary)
def upload_trajectories(body: TrajectoriesIn, svc: ServiceDep, who: WriterDep) -> IngestSummary:
    """Upload whole runs in the native trajectory format; lessons are distilled from them."""
    return svc.upload_trajectories(body, tenant=who.tenant)
