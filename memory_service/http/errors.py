"""HTTP errors: every error is JSON `{"code": ..., "message": ...}` with a 4xx status.

The handlers turn service errors, request validation and Starlette's own 404/405 into that
shape; the body-limit middleware answers oversized bodies with 413 before they are read.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_service.core.errors import ServiceError


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


async def _service_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return JSONResponse(status_code=exc.status, content={"code": exc.code, "message": exc.message})


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
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


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return JSONResponse(
        status_code=exc.status_code, content={"code": code, "message": str(exc.detail)}
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the JSON error handlers on `app`."""
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
