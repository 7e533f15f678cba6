"""Admin routes: rebuild values from the outcome log, rebuild the vector index, and move a
tenant's data out and in as a bundle (what `tunemem export/import --url` call).

An admin key maintains and moves its own tenant; an operator key (or the keyless embedded
default) every tenant of the store.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Query, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.core.schemas.admin import BundleCounts, IndexRebuilt, ValuesRebuilt
from tunemem.memory_service.http.deps import AdminDep, Caller, ServiceDep

router = APIRouter(tags=["admin"])

TenantQuery = Annotated[
    str | None,
    Query(
        max_length=64,
        description="the tenant to move; default the caller's (a key may only name its own)",
    ),
]
MaintainedQuery = Annotated[
    str | None,
    Query(
        max_length=64,
        description="the tenant to maintain; default the caller's (an operator's: every"
        " tenant; a key may only name its own)",
    ),
]


def scope_of(who: Caller, tenant: str | None = None) -> str | None:
    """The tenant a caller's maintenance covers: the one named (its own, unless an
    operator), else the caller's; None (every tenant) for an operator naming none."""
    if tenant is not None:
        return _tenant(who, tenant)
    return None if who.role == "operator" else who.tenant


@router.post("/v1/admin/values/rebuild", response_model=ValuesRebuilt)
def rebuild_values(svc: ServiceDep, who: AdminDep, tenant: MaintainedQuery = None) -> ValuesRebuilt:
    """Recompute the key's tenant's lesson values (an operator's: all) from the outcome log."""
    return ValuesRebuilt(outcomes_replayed=svc.rebuild_values(scope_of(who, tenant)))


@router.post("/v1/admin/reindex", response_model=IndexRebuilt)
def reindex(svc: ServiceDep, who: AdminDep, tenant: MaintainedQuery = None) -> IndexRebuilt:
    """Rebuild the key's tenant's vector index (an operator's: all) from the SQL store."""
    return IndexRebuilt(lessons_indexed=svc.reindex(tenant=scope_of(who, tenant)))


def _tenant(who: Caller, tenant: str | None) -> str:
    if tenant is None or tenant == who.tenant or who.role == "operator":
        return tenant or who.tenant
    raise ServiceError(
        f"this key belongs to tenant {who.tenant!r} and cannot act on tenant {tenant!r}",
        code="tenant_forbidden",
        status=403,
    )


def _scratch(suffix: str) -> Path:
    handle, name = tempfile.mkstemp(prefix="tunemem-bundle-", suffix=suffix)
    os.close(handle)
    return Path(name)


@router.get(
    "/v1/admin/export",
    response_class=FileResponse,
    responses={200: {"content": {"application/gzip": {}}, "description": "the bundle"}},
)
def export_bundle(
    svc: ServiceDep, who: AdminDep, background: BackgroundTasks, tenant: TenantQuery = None
) -> FileResponse:
    """A tenant's lessons, runs, retrievals and outcome log as a gzipped JSON Lines bundle."""
    chosen = _tenant(who, tenant)
    path = _scratch(".jsonl.gz")
    try:
        counts = svc.export(path, tenant=chosen)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    background.add_task(path.unlink, missing_ok=True)
    return FileResponse(
        path,
        media_type="application/gzip",
        filename=f"tunemem-{chosen}.jsonl.gz",
        headers={"X-Tunemem-Counts": json.dumps(counts)},
    )


@router.post(
    "/v1/admin/import",
    response_model=BundleCounts,
    openapi_extra={
        "requestBody": {
            "content": {"application/gzip": {}, "application/x-ndjson": {}},
            "required": True,
        }
    },
)
async def import_bundle(
    request: Request, svc: ServiceDep, who: AdminDep, tenant: TenantQuery = None
) -> BundleCounts:
    """Load a bundle written by export (gzipped or not) into a tenant; idempotent."""
    chosen = _tenant(who, tenant)
    body = await request.body()
    path = _scratch(".jsonl.gz" if body[:2] == b"\x1f\x8b" else ".jsonl")
    try:
        path.write_bytes(body)
        counts = await run_in_threadpool(svc.import_bundle, path, tenant=chosen)
        return BundleCounts(**counts)
    finally:
        path.unlink(missing_ok=True)
