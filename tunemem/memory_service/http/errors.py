"""HTTP errors: every error is JSON `{"code": ..., "message": ...}` with a 4xx status.

The handlers turn service errors, request validation and Starlette's own 404/405 into that
shape (a 405 keeps its `Allow` header); the body-limit middleware answers oversized bodies with
413, by Content-Length before they are read or, for chunked bodies, as soon as the count
passes the limit. `ERROR_RESPONSES` documents these shapes in the OpenAPI document.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tunemem.memory_service.core.errors import ServiceError


class ErrorBody(BaseModel):
    """Every error response: a stable machine-readable code and a human message."""

    code: str
    message: str
    details: list[dict[str, Any]] | None = None


_ERROR_TEXT = {
    400: "malformed request (e.g. a body that is not JSON)",
    401: "no key, or an unknown or revoked one",
    403: "the key's role does not allow this",
    404: "no such resource in the key's tenant",
    409: "conflict with stored state",
    413: "request body over the size limit",
    415: "a content encoding the route does not take (gzip is taken by POST /v1/trajectories)",
    422: "a field is missing, of the wrong type or out of range",
    429: "rate limit of the key reached; retry after the Retry-After seconds",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in _ERROR_TEXT.items()
}


class PayloadTooLarge(StarletteHTTPException):
    """Raised from the counting receive; FastAPI re-raises HTTP exceptions unchanged, so a
    chunked body over the limit ends as 413, not as a body-parsing 400."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")


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
                    raise PayloadTooLarge(self.max_bytes)
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
    return JSONResponse(
        status_code=exc.status,
        content={"code": exc.code, "message": exc.message},
        headers=getattr(exc, "headers", None),
    )


# Validation errors raised with their own type (`PydanticCustomError`) answer that type as code.
OWN_CODES = ("invalid_text", "invalid_toolchain", "invalid_timings", "invalid_config")


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
            "code": first["type"] if first.get("type") in OWN_CODES else "invalid_request",
            "message": f"{'.'.join(first['loc'])}: {first['msg']}",
            "details": details,
        },
    )


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        # FastAPI's only 400 is a body it could not parse, for any reason (invalid UTF-8,
        # nesting past the parser's recursion limit): to a client that is malformed JSON.
        return JSONResponse(
            status_code=400,
            content={
                "code": "malformed_json",
                "message": f"request body is not valid JSON ({exc.detail})",
            },
            headers=exc.headers,
        )
    code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
        exc.status_code, "http_error"
    )
    return JSONResponse(
        status_code=exc.status_code,
        content={"code": code, "message": str(exc.detail)},
        headers=exc.headers,
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the JSON error handlers on `app`."""
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
