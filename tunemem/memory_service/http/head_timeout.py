"""A deadline on each request's head, for `tunemem serve`: uvicorn cuts an idle keep-alive
connection, but not one that never sends a request, nor one that sends its request line and
headers a byte at a time, so such connections were bounded only by the file-descriptor limit.

`HeadTimeoutProtocol` is uvicorn's httptools protocol with one more timer: armed when a
connection opens and after each response, disarmed when a request's headers are complete; when
it fires the connection is closed. A request's body and the answer are not under it (the body
limit and the suggest deadline bound those).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# A request line and headers take milliseconds; a client slower than this is not a client.
HEAD_TIMEOUT_S = 10.0


class HeadTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline of `head_timeout_s` on each request head."""

    head_timeout_s = HEAD_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_task: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_task = self.loop.call_later(self.head_timeout_s, self._cut)

    def _disarm(self) -> None:
        if self._head_task is not None:
            self._head_task.cancel()
            self._head_task = None

    def _cut(self) -> None:
        self._head_task = None
        if not self.transport.is_closing():
            self.transport.close()
