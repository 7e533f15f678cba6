"""The `tunemem` command against a running server that requires keys (`--url`).

The server is the app over real HTTP on a free loopback port; the CLI reaches it through
RemoteService, so the key given by `--api-key` or TUNEMEM_API_KEY must go with every request.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.memory_service.http.app import create_app

NATIVE = Path(__file__).resolve().parents[2] / "bench/results/h200/rmsnorm.jsonl"

runner = CliRunner()


@pytest.fixture
def keyed_server(service) -> Iterator[tuple[str, str]]:
    """(url, agent key) of a server whose store has keys, so every request needs one."""
    _, secret = service.create_key("agent", name="cli test")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the test server did not start"
    yield f"http://127.0.0.1:{port}", secret
    server.should_exit = True
    thread.join(timeout=10)


def test_ingest_url_sends_the_key_from_the_environment(keyed_server, service, tmp_path):
    url, secret = keyed_server
    args = ["ingest", str(NATIVE), "--url", url, "--quiet", "--rejects", str(tmp_path / "r")]
    done = runner.invoke(app, args, env={"TUNEMEM_API_KEY": secret})
    assert done.exit_code == 0, done.output
    stored = service.counts()["trajectories"]
    assert stored > 0
    again = runner.invoke(app, args, env={"TUNEMEM_API_KEY": secret})
    assert again.exit_code == 0, again.output
    assert service.counts()["trajectories"] == stored  # idempotent through the server too
    assert f"skipped {stored}" in again.output


def test_ingest_url_sends_the_key_given_by_option(keyed_server, service, tmp_path):
    url, secret = keyed_server
    args = ["ingest", str(NATIVE), "--url", url, "--api-key", secret, "--quiet"]
    done = runner.invoke(app, [*args, "--rejects", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert service.counts()["trajectories"] > 0


def test_ingest_url_without_a_key_fails_in_one_line_and_stores_nothing(
    keyed_server, service, monkeypatch
):
    url, _ = keyed_server
    monkeypatch.delenv("TUNEMEM_API_KEY", raising=False)
    done = runner.invoke(app, ["ingest", str(NATIVE), "--url", url, "--quiet"])
    assert done.exit_code == 2
    assert "unauthorized" in done.output and "Traceback" not in done.output
    assert service.counts()["trajectories"] == 0


def test_lessons_list_url_with_the_key(keyed_server):
    url, secret = keyed_server
    done = runner.invoke(
        app, ["lessons", "list", "--url", url, "--json"], env={"TUNEMEM_API_KEY": secret}
    )
    assert done.exit_code == 0, done.output
    assert '"count": 0' in done.output


def test_a_url_with_a_path_is_refused_with_the_root_address_to_give(keyed_server):
    """`--url http://host:port/v1` used to end in a bare `not_found` (issue 31)."""
    url, secret = keyed_server
    done = runner.invoke(
        app, ["lessons", "list", "--url", f"{url}/v1"], env={"TUNEMEM_API_KEY": secret}
    )
    assert done.exit_code == 2, done.output
    text = " ".join(done.output.split())
    assert f"{url}/v1/v1/lessons is no route of a tunemem server" in text
    assert "root address" in text and "without /v1" in text
    # A tunemem answer about a missing lesson keeps its own code and message.
    missing = runner.invoke(
        app, ["lessons", "show", "0000dead", "--url", url], env={"TUNEMEM_API_KEY": secret}
    )
    assert missing.exit_code == 2 and "lesson_not_found" in missing.output
