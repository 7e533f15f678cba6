"""Fixtures for tests that need the app on a real port and a real browser (headless Chromium)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def serve() -> Iterator[Callable[[object], str]]:
    """serve(app) runs the app with uvicorn on a free loopback port and returns its URL."""
    import uvicorn

    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(app: object) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")  # type: ignore[arg-type]
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the test server did not start"
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path: Path) -> Callable[..., str]:
    """browser(url) loads a page in headless Chromium that can reach only 127.0.0.1 (so a page
    that needs a CDN stays blank, as it would air-gapped) and returns the DOM it built;
    browser(url, screenshot=path) also saves a PNG of the page."""
    if CHROMIUM is None:
        pytest.skip("needs headless Chromium (apt-get install chromium)")

    def load(url: str, screenshot: Path | None = None, wait_ms: int = 20000) -> str:
        base = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--virtual-time-budget={wait_ms}",
        ]
        dom = subprocess.run(
            [*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        if screenshot is not None:
            subprocess.run(
                [
                    *base,
                    # paint every compositor stage before the shot and keep sRGB colours, so a
                    # loaded 2-core machine does not capture a blank or re-tinted frame
                    "--run-all-compositor-stages-before-draw",
                    "--force-color-profile=srgb",
                    f"--screenshot={screenshot}",
                    "--window-size=1200,900",
                    url,
                ],
                capture_output=True,
                timeout=120,
                check=True,
            )
        return dom

    return load
