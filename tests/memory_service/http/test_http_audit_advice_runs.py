"""The transfer audit page's advice runs as printed and fills its default view (issue 36, case
2): on a fresh seeded store every command `/ui/transfer` advises carries the serving server's
address and succeeds, after which the default view (no stage chosen) shows a rank correlation;
and `tunemem agent run` with an unusable --url says so in one line."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tunemem.cli.serve import seed_samples
from tunemem.memory_service.http.app import create_app

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def advised_commands(page: str) -> list[str]:
    commands = []
    for paragraph in re.findall(r'<p class="advice">(.*?)</p>', page, re.S):
        for code in re.findall(r"<code>(.*?)</code>", paragraph, re.S):
            text = html.unescape(code)
            if text.startswith(".venv/bin/tunemem"):
                commands.append(text)
    return commands


@pytest.mark.slow
def test_the_advised_commands_run_as_printed_and_fill_the_default_view(make_service, serve) -> None:
    service = make_service()
    seed_samples(service)
    url = serve(create_app(service))
    page = httpx.get(f"{url}/ui/transfer", timeout=60).text
    assert '<select name="stage">' in page and '<select name="op">' in page
    assert 'value="convolution"' in page  # the op selector lists the store's families
    commands = advised_commands(page)
    assert commands, "the fresh store's page advises nothing"
    for command in commands:
        assert f"--url {url}" in command and "--url URL" not in command
        done = subprocess.run(
            shlex.split(command.replace(".venv/bin/", f"{BIN}/")),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    audit = httpx.get(f"{url}/v1/audit/transfer", timeout=60).json()
    assert any(pair["spearman"] is not None for pair in audit["pairs"]), audit["stage"]
    page = httpx.get(f"{url}/ui/transfer", timeout=60).text
    assert "The rank correlations are n/a" not in page


def test_agent_run_with_an_unusable_url_says_so_in_one_line() -> None:
    from tunemem.cli.app import app

    task = str(REPO / "tunemem/ingest/samples/targets/convolution")
    for url in ("URL", "http://127.0.0.1:9"):
        done = CliRunner().invoke(
            app, ["agent", "run", "--task", task, "--chip", "w6600", "--url", url]
        )
        assert done.exit_code != 0
        assert (
            "Traceback" not in done.output
            and done.exception is None
            or isinstance(done.exception, SystemExit)
        )
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert len(lines) == 1 and url in lines[0], done.output
