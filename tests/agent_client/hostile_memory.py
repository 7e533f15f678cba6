"""A hostile memory for the tuner integrations' tests: a plain HTTP server on a loopback port
that answers `/v1/suggest`, `/v1/outcomes`, `/v1/trajectories` and `GET /v1/lessons` (the MoE
tool's shipped files) the way a broken or malicious memory would.

Modes (`HostileMemory.mode`, for suggest; `report_mode` for outcomes and uploads; `lessons_mode`
for the lesson listing, whose honest answer is `lessons`, one page):

- `honest`: untried configurations of the request's own space (its valid list when given);
- `hang`: reads the request and never answers;
- `trickle`: headers, then one byte of a JSON body every `trickle_s` seconds;
- `error`: 500 with a plain-text body;
- `malformed`: 200 with a body that is not what the API says (`malformed` picks which);
- `outside`: configurations with values outside the space;
- `restricted`: configurations of the parameter product that the valid list excludes;
- `repeat`: the same configuration every round (tried after the first);
- `wrong_types`: a missing parameter, a string for a number, true for 1;
- `huge`: a chunked answer that never ends (64 KiB chunks until the client hangs up);
- `busy`: 429 with `Retry-After: retry_after` (1 s unless set; the memory is up, its slots for
  the tenant taken); `busy_first = n` answers the first n suggests so whatever the mode;
- `endless` (lessons only): full pages of junk lessons at every offset, for ever.

Everything here is SYNTHETIC: no service runs, nothing is remembered.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MALFORMED = {
    "text": b"<html>not json</html>",
    "list": b"[1, 2, 3]",
    "suggestions-text": json.dumps({"retrieval_id": "r", "suggestions": "BLOCK=64"}).encode(),
    "suggestions-scalars": json.dumps({"retrieval_id": 7, "suggestions": [1, "a", None]}).encode(),
    "config-text": json.dumps(
        {"retrieval_id": "r", "suggestions": [{"config": "x", "source": "exemplar"}]}
    ).encode(),
    "lessons-junk": None,  # filled per request: usable configs with lessons that are not objects
}


def _configs(space: dict[str, Any]) -> list[dict[str, Any]]:
    params = space.get("params") or {}
    if space.get("valid") is not None:
        return list(space["valid"])
    return [
        dict(zip(params, values, strict=True)) for values in itertools.product(*params.values())
    ]


def _suggestion(config: dict[str, Any], source: str = "exemplar", lessons: Any = None) -> dict:
    return {
        "config": config,
        "source": source,
        "lessons": [{"id": "lesson-1", "value": 0.5, "value_scope": "chip", "n": 1}]
        if lessons is None
        else lessons,
        "rationale": "hostile",
    }


class HostileMemory:
    """The server; `url` is its address. Counts the requests per path in `requests`."""

    def __init__(self, mode: str = "honest", report_mode: str = "honest") -> None:
        self.mode = mode
        self.report_mode = report_mode
        self.lessons_mode = "honest"
        self.lessons: list[dict[str, Any]] = []
        self.malformed = "text"
        self.trickle_s = 0.5
        self.retry_after = "1"
        self.busy_first = 0
        self.requests: dict[str, int] = {}
        self.bytes_sent = 0
        self._stop = threading.Event()
        memory = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path
                memory.requests[path] = memory.requests.get(path, 0) + 1
                mode = memory.mode if path == "/v1/suggest" else memory.report_mode
                if path == "/v1/suggest" and memory.requests[path] <= memory.busy_first:
                    mode = "busy"
                try:
                    memory.answer(self, mode, path, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up, as it should

            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                path = self.path.split("?")[0]
                memory.requests[path] = memory.requests.get(path, 0) + 1
                try:
                    memory.answer(self, memory.lessons_mode, path, {})
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    # -- answers -------------------------------------------------------------------------

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        self.bytes_sent += len(body)

    def answer(self, handler: BaseHTTPRequestHandler, mode: str, path: str, body: dict) -> None:
        if mode == "hang":
            self._stop.wait(60)
            return
        if mode == "error":
            handler.send_response(500)
            handler.send_header("content-type", "text/plain")
            handler.send_header("content-length", "21")
            handler.end_headers()
            handler.wfile.write(b"Internal Server Error")
            return
        if mode == "busy":
            handler.send_response(429)
            handler.send_header("content-type", "application/json")
            handler.send_header("retry-after", self.retry_after)
            body = b'{"code": "busy", "detail": "too many requests"}'
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        if mode == "trickle":
            payload = json.dumps({"retrieval_id": "r", "suggestions": []}).encode() * 50
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            for i in range(len(payload)):
                if self._stop.wait(self.trickle_s):
                    return
                handler.wfile.write(payload[i : i + 1])
                handler.wfile.flush()
            return
        if mode == "huge":
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("transfer-encoding", "chunked")
            handler.end_headers()
            chunk = b" " * 65536
            while not self._stop.is_set() and self.bytes_sent < 400 * 2**20:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.bytes_sent += len(chunk)
            return
        if path == "/v1/lessons":
            self._send(handler, 200, self._lessons(mode))
            return
        if path != "/v1/suggest":
            self._send(handler, 201, b"{}")
            return
        self._send(handler, 200, self._suggest(mode, body))

    def _lessons(self, mode: str) -> bytes:
        if mode == "malformed" and MALFORMED[self.malformed] is not None:
            return MALFORMED[self.malformed]  # type: ignore[return-value]
        if mode == "endless":
            junk = [{"id": f"j{i}", "hint": "x", "applicability": [1]} for i in range(500)]
            return json.dumps({"data": junk, "count": 10**9}).encode()
        return json.dumps({"data": self.lessons, "count": len(self.lessons)}).encode()

    def _suggest(self, mode: str, body: dict) -> bytes:
        if mode == "malformed" and MALFORMED[self.malformed] is not None:
            return MALFORMED[self.malformed]  # type: ignore[return-value]
        space = body.get("space") or {}
        params: dict[str, list[Any]] = space.get("params") or {}
        k = int(body.get("k") or 5)
        tried = [o["config"] for o in body.get("observations") or []]
        untried = [c for c in _configs(space) if c not in tried]
        suggestions: list[dict[str, Any]]
        if mode in ("honest", "malformed"):
            junk = ["lesson", 3, {"id": 4}] if mode == "malformed" else None
            suggestions = [_suggestion(c, lessons=junk) for c in untried[:k]]
        elif mode == "outside":
            suggestions = [
                _suggestion({n: max(v) * 1000 + i for n, v in params.items()}) for i in range(k)
            ]
        elif mode == "restricted":
            valid = space.get("valid") or []
            product = [
                dict(zip(params, values, strict=True))
                for values in itertools.product(*params.values())
            ]
            suggestions = [_suggestion(c) for c in product if c not in valid][:k]
        elif mode == "repeat":
            suggestions = [_suggestion(_configs(space)[0])]
        elif mode == "wrong_types":
            first = _configs(space)[0]
            name = next(iter(first))
            suggestions = [
                _suggestion({n: v for n, v in first.items() if n != name}),
                _suggestion({**first, name: str(first[name])}),
                _suggestion({**first, name: True} if first[name] == 1 else {**first, name: [1]}),
            ]
        else:
            raise ValueError(f"unknown mode {mode!r}")
        return json.dumps({"retrieval_id": "hostile-1", "suggestions": suggestions}).encode()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def elapsed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started
