"""FastAPI app: thin HTTP adapters over MemoryService (API v1, DESIGN section 6).

Every error is JSON `{"code": ..., "message": ...}` with a 4xx status; bad input changes
nothing because the service validates before it writes and writes in one transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from pydantic import ValidationError
from sqlmodel import Session
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ingest.records import TrajectoryRecord
from memory_service.auth import authenticate, require
from memory_service.errors import InvalidInput, ServiceError
from memory_service.models import (
    IngestSummary,
    LessonDetail,
    LessonHistory,
    LessonKind,
    LessonList,
    LessonPublic,
    LessonsCreate,
    LessonsCreated,
    LessonUpdate,
    ReportRequest,
    ReportResponse,
    RetrieveRequest,
    RetrieveResponse,
    TrajectoriesIn,
)
from memory_service.routes_audit import router as audit_router
from memory_service.service import MemoryService


class PayloadTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """Reject bodies over the limit with 413, by Content-Length or by counting the stream."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await _too_large(self.max_bytes)(scope, receive, send)
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise PayloadTooLarge()
            return message

        try:
            await self.app(scope, counting_receive, send)
        except PayloadTooLarge:
            await _too_large(self.max_bytes)(scope, receive, send)


def _too_large(limit: int) -> JSONResponse:
    return JSONResponse(
        status_code=413,
        content={"code": "payload_too_large", "message": f"request body exceeds {limit} bytes"},
    )


def get_service(request: Request) -> MemoryService:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[MemoryService, Depends(get_service)]


@dataclass(frozen=True)
class Caller:
    tenant: str
    role: str


def needs(role: str) -> Any:
    """A dependency that authenticates the request and checks its role."""

    def dependency(
        request: Request,
        svc: ServiceDep,
        authorization: Annotated[str | None, Header()] = None,
    ) -> Caller:
        host = request.client.host if request.client else None
        with Session(svc.engine) as session:
            tenant, granted = authenticate(session, authorization, host, svc.settings.tenant)
        require(role, granted)
        return Caller(tenant, granted)

    return dependency


ReaderDep = Annotated[Caller, Depends(needs("reader"))]
AgentDep = Annotated[Caller, Depends(needs("agent"))]
AdminDep = Annotated[Caller, Depends(needs("admin"))]


def create_app(service: MemoryService) -> FastAPI:
    """Build the HTTP app around one service instance."""
    app = FastAPI(
        title="tunemem",
        version="1",
        description="Value-driven memory for kernel-tuning agents.",
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
    app.include_router(audit_router)

    @app.middleware("http")
    async def _metrics(request: Request, call_next: Any) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", "unmatched")
        requests_total.labels(name, str(response.status_code)).inc()
        latency.labels(name).observe(time.perf_counter() - start)
        return response

    @app.exception_handler(ServiceError)
    async def _service_error(_: Request, exc: ServiceError) -> JSONResponse:
        return JSONResponse(
            status_code=exc.status, content={"code": exc.code, "message": exc.message}
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(
                status_code=400,
                content={"code": "malformed_json", "message": "request body is not valid JSON"},
            )
        details = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg"), "type": e.get("type")}
            for e in errors
        ]
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        return JSONResponse(
            status_code=422,
            content={
                "code": "invalid_request",
                "message": f"{'.'.join(first['loc'])}: {first['msg']}",
                "details": details,
            },
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(
            status_code=exc.status_code, content={"code": code, "message": str(exc.detail)}
        )

    @app.post("/v1/lessons", status_code=201, response_model=LessonsCreated)
    def add_lessons(body: LessonsCreate, svc: ServiceDep, who: AgentDep) -> LessonsCreated:
        """Add one or many lessons (idempotent by content; near-duplicates merge)."""
        return svc.add_lessons(body.lessons, tenant=who.tenant, creator=f"key:{who.role}")

    @app.get("/v1/lessons", response_model=LessonList)
    def list_lessons(
        svc: ServiceDep,
        who: ReaderDep,
        kind: LessonKind | None = None,
        backend: str | None = None,
        chip: str | None = None,
        op: str | None = None,
        q: str | None = None,
        status: Annotated[str, Query(pattern="^(active|archived|all)$")] = "active",
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> LessonList:
        """List lessons with filters and paging; `count` is the total matching."""
        return svc.list_lessons(
            kind=kind,
            backend=backend,
            chip=chip,
            op=op,
            q=q,
            status=status,
            limit=limit,
            offset=offset,
            tenant=who.tenant,
        )

    @app.get("/v1/lessons/{lesson_id}", response_model=LessonDetail)
    def get_lesson(lesson_id: str, svc: ServiceDep, who: ReaderDep) -> LessonDetail:
        """One lesson with its values per stage and scope."""
        return svc.get_lesson(lesson_id, tenant=who.tenant)

    @app.patch("/v1/lessons/{lesson_id}", response_model=LessonPublic)
    def update_lesson(
        lesson_id: str, body: LessonUpdate, svc: ServiceDep, who: AdminDep
    ) -> LessonPublic:
        """Edit a lesson's text, kind, hint or applicability (the old version is kept)."""
        return svc.update_lesson(lesson_id, body, tenant=who.tenant)

    @app.delete("/v1/lessons/{lesson_id}", response_model=LessonPublic)
    def archive_lesson(lesson_id: str, svc: ServiceDep, who: AdminDep) -> LessonPublic:
        """Archive a lesson: it leaves retrieval; it and its history are kept."""
        return svc.archive_lesson(lesson_id, tenant=who.tenant)

    @app.get("/v1/lessons/{lesson_id}/history", response_model=LessonHistory)
    def lesson_history(lesson_id: str, svc: ServiceDep, who: ReaderDep) -> LessonHistory:
        """The outcomes behind a lesson's values."""
        return svc.lesson_history(lesson_id, tenant=who.tenant)

    @app.post("/v1/retrieve", response_model=RetrieveResponse)
    def retrieve(body: RetrieveRequest, svc: ServiceDep, who: AgentDep) -> RetrieveResponse:
        """Rank lessons for a task, context and stage by similarity and learned value."""
        return svc.retrieve(body, tenant=who.tenant)

    @app.post("/v1/outcomes", response_model=ReportResponse)
    def report(
        body: ReportRequest,
        svc: ServiceDep,
        who: AgentDep,
        idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
    ) -> ReportResponse:
        """Report an attempt's outcome; credited lessons' values are updated."""
        return svc.report(body, idempotency_key=idempotency_key, tenant=who.tenant)

    @app.post("/v1/trajectories", status_code=201, response_model=IngestSummary)
    def upload_trajectories(body: TrajectoriesIn, svc: ServiceDep, who: AgentDep) -> IngestSummary:
        """Upload whole runs in the native trajectory format; lessons are distilled from them."""
        records = []
        for position, raw in enumerate(body.trajectories):
            try:
                records.append(_native_record(raw))
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                raise InvalidInput(
                    f"trajectories[{position}]: {exc!r}", code="invalid_trajectory"
                ) from exc
        return svc.ingest(records, tenant=who.tenant)

    @app.post("/v1/admin/values/rebuild")
    def rebuild_values(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
        """Recompute every lesson value from the append-only outcome log."""
        return {"outcomes_replayed": svc.rebuild_values()}

    @app.post("/v1/admin/reindex")
    def reindex(svc: ServiceDep, who: AdminDep) -> dict[str, int]:
        """Rebuild the vector index from the SQL store."""
        return {"lessons_indexed": svc.reindex()}

    @app.get("/healthz")
    def healthz(svc: ServiceDep) -> dict[str, Any]:
        """Liveness, with the store's counts."""
        return {"status": "ok", "counts": svc.counts()}

    @app.get("/metrics")
    def metrics() -> Response:
        """Prometheus metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app


def _native_record(raw: dict[str, Any]) -> TrajectoryRecord:
    """Parse one native trajectory and normalise its chip name through `platforms`."""
    import platforms

    version = raw.get("version", 1)
    if version != 1:
        raise ValueError(f"unsupported native format version {version}")
    record = TrajectoryRecord.from_dict(raw)
    if not record.attempts:
        raise ValueError("a trajectory needs at least one attempt")
    chip = platforms.resolve(
        record.context.chip_raw or record.context.chip, backend=record.context.backend
    )
    record.context.chip_raw = record.context.chip_raw or record.context.chip
    record.context.chip = chip.id
    record.context.backend = chip.backend
    return record
