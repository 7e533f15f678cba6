"""FastAPI app: thin HTTP adapters over MemoryService (API v1, DESIGN section 6).

Every error is JSON `{"code": ..., "message": ...}` with a 4xx status; bad input changes
nothing because the service validates before it writes and writes in one transaction.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from memory_service.http.deps import ServiceDep
from memory_service.http.errors import (
    ERROR_RESPONSES,
    BodyLimitMiddleware,
    install_error_handlers,
)
from memory_service.http.routes import admin, audit, learning, lessons, trajectories
from memory_service.service import MemoryService


def create_app(service: MemoryService) -> FastAPI:
    """Build the HTTP app around one service instance."""
    app = FastAPI(
        title="tunemem",
        version="1",
        description="Value-driven memory for kernel-tuning agents.",
        responses=ERROR_RESPONSES,
    )
    app.state.service = service
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

    @app.get("/healthz")
    def healthz(svc: ServiceDep) -> dict[str, Any]:
        """Liveness, with the store's counts."""
        return {"status": "ok", "counts": svc.counts()}

    @app.get("/metrics")
    def metrics() -> Response:
        """Prometheus metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app
