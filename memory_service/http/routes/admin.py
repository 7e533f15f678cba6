"""Admin routes: rebuild values from the outcome log, rebuild the vector index.

An admin key maintains its own tenant; an operator key (or the keyless embedded default)
maintains every tenant of the store.
"""

from __future__ import annotations

from fastapi import APIRouter

from memory_service.http.deps import AdminDep, Caller, ServiceDep

router = APIRouter(tags=["admin"])


def scope_of(who: Caller) -> str | None:
    """The tenant a caller's maintenance covers; None (every tenant) for an operator."""
    return None if who.role == "operator" else who.tenant


@router.post("/v1/admin/values/rebuild")
def rebuild_values(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
    """Recompute the key's tenant's lesson values (an operator's: all) from the outcome log."""
    return {"outcomes_replayed": svc.rebuild_values(scope_of(who))}


@router.post("/v1/admin/reindex")
def reindex(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
    """Rebuild the key's tenant's vector index (an operator's: all) from the SQL store."""
    return {"lessons_indexed": svc.reindex(tenant=scope_of(who))}
