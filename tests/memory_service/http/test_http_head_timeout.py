"""Slow and silent connections (issue 39, case 8): a connection that sends no request, or its
request head a byte at a time, is closed at the head deadline; requests go on as before. The
server is the app over real HTTP through `tunemem serve`'s protocol, its deadline shortened."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.http.head_timeout import HeadTimeoutProtocol


class Quick(HeadTimeoutProtocol):
    head_timeout_s = 0.5


@pytest.fixture
def server(service) -> Iterator[int]:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_app(service), host="127.0.0.1", port=port, log_level="warning", http=Quick
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running.started
    yield port
    running.should_exit = True
    thread.join(timeout=10)


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """Whether the server closes the connection within `seconds` (sending `trickle` a byte
    at a time meanwhile)."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline:
        try:
            if sent < len(trickle):
                sock.sendall(trickle[sent : sent + 1])
                sent += 1
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_a_silent_connection_is_closed(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as sock:
        assert closed_within(sock, 5.0)


def test_a_head_sent_a_byte_at_a_time_is_closed(server: int) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 200
    with socket.create_connection(("127.0.0.1", server)) as sock:
        assert closed_within(sock, 5.0, trickle=head)


def test_requests_are_answered_as_before(server: int) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{server}") as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
            time.sleep(0.2)
