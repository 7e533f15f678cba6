"""`/healthz`: liveness and whether the vector index answers, for anyone; the counts of the
caller's tenant (an operator's: the whole store) for a caller with a key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from tunemem.memory_service.core.schemas.admin import HealthPublic, StoreCounts
from tunemem.memory_service.http.deps import AnyoneDep, ServiceDep

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthPublic,
    response_model_exclude_unset=True,
    responses={503: {"model": HealthPublic, "description": "the vector index is unusable"}},
)
def healthz(svc: ServiceDep, who: AnyoneDep) -> JSONResponse:
    """Liveness and whether the index answers; counts only for a key (its tenant's)."""
    # Anyone learns the default tenant's index state; a key its own tenant's, an operator all.
    scope = svc.settings.tenant if who is None else None if who.role == "operator" else who.tenant
    health = svc.health(scope)
    body = HealthPublic(status=health["status"], index=health["index"])
    if who is not None:
        body.counts = StoreCounts(**svc.counts(scope))
        body.index_entries = health["index_entries"]
        body.active_lessons = health["active_lessons"]
    return JSONResponse(
        body.model_dump(mode="json", exclude_unset=True),
        status_code=200 if body.status == "ok" else 503,
    )
