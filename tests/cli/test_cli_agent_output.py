"""`tunemem agent run` as a person reads it: numbers with 3 significant digits, no line split
by wrapping, and a run that stops at a plateau by default, saying so in words."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app
from tunemem.ingest.samples import TARGETS_DIR

TASK = str(TARGETS_DIR / "convolution")  # the bundled W6600 recording, replayed


def test_agent_run_stops_at_the_default_plateau_and_prints_whole_lines():
    result = CliRunner().invoke(
        cli_app,
        [
            "agent",
            "run",
            "--task",
            TASK,
            "--chip",
            "w6600",
            "--budget",
            "60",
            "--proposer",
            "random",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("best ") and "stopped: 8 attempts without improvement" in lines[-1]
    attempts = [line for line in lines if line.startswith("#")]
    assert 8 < len(attempts) < 60
    starts = ("#", "      config ", "      error ", "best ")
    assert all(line.startswith(starts) for line in lines), lines
    assert not re.search(r"\d\.\d{5,}", result.output)  # no raw floats


def test_plateau_zero_runs_the_whole_budget():
    result = CliRunner().invoke(
        cli_app,
        [
            "agent",
            "run",
            "--task",
            TASK,
            "--chip",
            "w6600",
            "--budget",
            "12",
            "--plateau",
            "0",
            "--proposer",
            "random",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "after 12 attempts (the attempt budget is spent)" in result.output
