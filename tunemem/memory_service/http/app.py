"""FastAPI app: thin HTTP adapters over MemoryService (API v1, DESIGN section 6).

Every error is JSON `{"code": ..., "message": ...}` with a 4xx status; bad input changes
nothing because the service validates before it writes and writes in one transaction.
"""

from __future__ import annotations

import time

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunemem.memory_service.core.access.quota import SharedWriteQuota
from tunemem.memory_service.http.deps import ReaderDep
from tunemem.memory_service.http.docs import install_offline_docs
from tunemem.memory_service.http.errors import (
    ERROR_RESPONSES,
    BodyLimitMiddleware,
    install_error_handlers,
)
from tunemem.memory_service.http.inflate import InflateMiddleware
from tunemem.memory_service.http.ratelimit import SuggestSlots
from tunemem.memory_service.http.routes import (
    admin,
    audit,
    health,
    learning,
    lessons,
    trajectories,
    ui,
)
from tunemem.memory_service.http.url_text import UrlTextMiddleware
from tunemem.memory_service.service import MemoryService


class MetricsMiddleware:
    """Count requests and time them per route, as plain ASGI.

    (Starlette's `@app.middleware("http")` runs each request through a task group and memory
    streams, which cost more than the metrics themselves.)
    """

    def __init__(self, app: ASGIApp, requests_total: Counter, latency: Histogram):
        self.app = app
        self.requests_total = requests_total
        self.latency = latency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            name = getattr(scope.get("route"), "path", "unmatched")
            self.requests_total.labels(name, str(status)).inc()
            self.latency.labels(name).observe(time.perf_counter() - start)


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
    app.state.write_quota = SharedWriteQuota(service.engine, rate) if rate > 0 else None
    slots = service.settings.suggest_concurrency
    app.state.suggest_slots = (
        SuggestSlots(slots, service.settings.suggest_per_tenant) if slots > 0 else None
    )
    registry = CollectorRegistry()
    requests_total = Counter(
        "tunemem_requests_total", "HTTP requests", ["route", "status"], registry=registry
    )
    latency = Histogram(
        "tunemem_request_seconds", "HTTP request latency", ["route"], registry=registry
    )
    # Inside the body limit, which counts a compressed body's bytes as they arrive.
    app.add_middleware(InflateMiddleware, max_bytes=service.settings.max_inflated_body_bytes)
    app.add_middleware(BodyLimitMiddleware, max_bytes=service.settings.max_body_bytes)
    app.add_middleware(UrlTextMiddleware)
    app.add_middleware(MetricsMiddleware, requests_total=requests_total, latency=latency)
    install_error_handlers(app)
    for module in (audit, lessons, learning, trajectories, admin, health, ui):
        app.include_router(module.router)

    @app.get("/metrics")
    def metrics(_who: ReaderDep) -> Response:
        """Prometheus metrics (a keyed server asks for a key, as every route but /healthz)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app


def app_from_environment() -> FastAPI:
    """The app over a service configured by TUNEMEM_* alone: what each of several uvicorn
    workers builds for itself (`tunemem serve --workers N`, server mode)."""
    import gc

    app = create_app(MemoryService())
    gc.collect()
    gc.freeze()  # as `tunemem serve` does: start-up objects out of the collector's reach
    return app
