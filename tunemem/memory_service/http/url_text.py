"""The URL's share of "text that cannot be stored is refused at the door": a NUL in the path or
the query string (`%00`) is answered 422 `invalid_text` before any route sees it, whether the
route takes the value through a request model or as a plain query parameter. (A lone
surrogate cannot arrive in a URL: its percent-encoded bytes are no UTF-8 and decode to U+FFFD,
which is text.) Bodies are checked by the request models (`memory_service.core.schemas.inbound`)."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class UrlTextMiddleware:
    """Refuse requests whose path or query string holds a NUL character."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query: bytes = scope.get("query_string") or b""
            if "\x00" in scope.get("path", "") or b"%00" in query or b"\x00" in query:
                response = JSONResponse(
                    status_code=422,
                    content={
                        "code": "invalid_text",
                        "message": "the URL holds a NUL character (U+0000), which cannot be "
                        "stored or matched",
                    },
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
