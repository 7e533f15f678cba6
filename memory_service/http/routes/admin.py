"""Admin routes: rebuild values from the outcome log, rebuild the vector index."""

from __future__ import annotations

from fastapi import APIRouter

from memory_service.http.deps import AdminDep, ServiceDep

router = APIRouter(tags=["admin"])


@router.post("/v1/admin/values/rebuild")
def rebuild_values(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
    """Recompute every lesson value from the append-only outcome log."""
    return {"outcomes_replayed": svc.rebuild_values()}


@router.post("/v1/admin/reindex")
def reindex(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
    """Rebuild the vector index from the SQL store."""
    return {"lessons_indexed": svc.reindex()}
