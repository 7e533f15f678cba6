"""FastAPI app: thin HTTP adapters over MemoryService (API v1, DESIGN section 6).

Every error is JSON `{"code": ..., "message": ...}` with a 4xx status; bad input changes
nothing because the service validates before it writes and writes in one transaction.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from memory_service.core.errors import ServiceError
from memory_service.http.deps import ServiceDep
from memory_service.http.docs import install_offline_docs
from memory_service.http.errors import (
    ERROR_RESPONSES,
    BodyLimitMiddleware,
    install_error_handlers,
)
from memory_service.http.ratelimit import WriteQuota
from memory_service.http.routes import admin, audit, learning, lessons, trajectories
from memory_service.service import MemoryService


def create_app(service: MemoryService) -> FastAPI:
    """Build the HTTP app around one service instance."""
    app = FastAPI(
        title="tunemem",
        version="1",
        description="Value-driven memory for kernel-tuning agents.",
        responses=ERROR_RESPONSES,
        docs_url=None,  # /docs and /redoc are served from installed files, not a CDN
        redoc_url=None,
    )
    install_offline_docs(app)
    app.state.service = service
    rate = service.settings.write_rate_per_minute
    app.state.write_quota = WriteQuota(rate) if rate > 0 else None
    registry = CollectorRegistry()
    requests_total = Counter(
        "tunemem_requests_total", "HTTP requests", ["route", "status"], registry=registry
    )
    latency = Histogram(
        "tunemem_request_seconds", "HTTP request latency", ["route"], registry=registry
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=service.settings.max_body_bytes)
    install_error_handlers(app)
    for module in (audit, lessons, learning, trajectories, admin):
        app.include_router(module.router)

    @app.middleware("http")
    async def _metrics(request: Request, call_next: Any) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", "unmatched")
        requests_total.labels(name, str(response.status_code)).inc()
        latency.labels(name).observe(time.perf_counter() - start)
        return response

    @app.get("/healthz", responses={503: {"description": "the vector index is unusable"}})
    def healthz(
        request: Request,
        svc: ServiceDep,
        authorization: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        """Liveness and whether the index answers; counts only for a key (its tenant's)."""
        host = request.client.host if request.client else None
        try:
            tenant, role = svc.authenticate(authorization, host)
        except ServiceError:
            tenant, role = None, None
        scope = None if role == "operator" else tenant
        health = svc.health(scope if role else svc.settings.tenant)
        body: dict[str, Any] = {"status": health["status"], "index": health["index"]}
        if role is not None:
            body["counts"] = svc.counts(scope)
            body["index_entries"] = health["index_entries"]
            body["active_lessons"] = health["active_lessons"]
        return JSONResponse(body, status_code=200 if health["status"] == "ok" else 503)

    @app.get("/metrics")
    def metrics() -> Response:
        """Prometheus metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app
