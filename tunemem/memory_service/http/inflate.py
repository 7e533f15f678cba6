"""Request bodies sent gzip-compressed (`Content-Encoding: gzip`), taken on the upload route.

A Kernel Tuner cache of some 17,000 configurations is one run of about 8 MiB of JSON, past the
default body limit, which `tunemem ingest` reads whole from a file. Compressed, such a run is
about a ninth of that, so `tunemem ingest --url` sends a run too large for one plain upload
gzipped, and the server stores it as the embedded ingest does: one run, not parts of it (a run
cut in parts would distil each part's best as the run's best). The body limit
(TUNEMEM_MAX_BODY_BYTES) still bounds the bytes on the wire, counted outside this middleware;
the inflated body is bounded by TUNEMEM_MAX_INFLATED_BODY_BYTES, checked while inflating, so a
bomb costs no more than that bound. Inflating runs off the event loop.

Refused, each with a JSON code and nothing stored: an inflated body past its bound (413
`payload_too_large`), a stream that is no complete gzip (400 `malformed_body`), and any other
encoding, or gzip on another route (415 `unsupported_encoding`).
"""

from __future__ import annotations

import zlib

from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Where a compressed body is taken: (method, path).
INFLATED_ROUTES = frozenset({("POST", "/v1/trajectories")})


class Unusable(Exception):
    """A compressed body that cannot be inflated within the bound: the answer's parts."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def inflate(body: bytes, limit: int) -> bytes:
    """The gzip stream's content, at most `limit` bytes (see the module for what is refused)."""
    stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = stream.decompress(body, limit + 1)
    except zlib.error as exc:
        raise Unusable(400, "malformed_body", f"the body is no gzip stream: {exc}") from exc
    if len(out) > limit or stream.unconsumed_tail:
        raise Unusable(
            413,
            "payload_too_large",
            f"the request body inflates past {limit} bytes "
            "(setting max_inflated_body_bytes, TUNEMEM_MAX_INFLATED_BODY_BYTES)",
        )
    if not stream.eof or stream.unused_data:
        raise Unusable(400, "malformed_body", "the body is no single complete gzip stream")
    return out


def _refuse(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"code": code, "message": message})


class InflateMiddleware:
    """Inflate a gzip-encoded request body on `INFLATED_ROUTES` (see the module)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        encoding = next((v for k, v in headers if k == b"content-encoding"), None)
        if encoding is None or encoding.strip().lower() in (b"", b"identity"):
            await self.app(scope, receive, send)
            return
        route = (scope.get("method", ""), scope.get("path", ""))
        if encoding.strip().lower() != b"gzip" or route not in INFLATED_ROUTES:
            where = " ".join(sorted(f"{m} {p}" for m, p in INFLATED_ROUTES))
            message = f"a request body may be gzip-encoded on {where} only"
            await _refuse(415, "unsupported_encoding", message)(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:  # the body limit outside counts these bytes and stops a body past it
            message_in = await receive()
            if message_in["type"] != "http.request":
                return  # the client went away
            chunks.append(message_in.get("body", b""))
            more = bool(message_in.get("more_body"))
        try:
            body = await run_in_threadpool(inflate, b"".join(chunks), self.max_bytes)
        except Unusable as refused:
            await _refuse(refused.status, refused.code, refused.message)(scope, receive, send)
            return
        kept = [(k, v) for k, v in headers if k not in (b"content-encoding", b"content-length")]
        inner = {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}
        delivered = False

        async def inflated_receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(inner, inflated_receive, send)
