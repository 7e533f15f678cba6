"""`tunemem agent run` with a bad or unreachable `--url` (issue 39, first hour): one line and
exit 2, as every other command, instead of a traceback of hundreds of lines."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.samples import TARGETS_DIR


def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize("url", [closed_url(), "notaurl", "ftp://127.0.0.1:9"])
def test_a_memory_that_cannot_be_reached_is_one_line(url: str) -> None:
    task = TARGETS_DIR / "convolution" / "W6600.json.gz"
    args = ["agent", "run", "--task", str(task), "--chip", "w6600", "--budget", "3"]
    done = CliRunner().invoke(app, [*args, "--url", url])
    assert done.exit_code == 2, done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot reach the memory" in lines[0], done.output
