"""A benchmark that runs both as `tunemem bench <name>` and as `python -m tunemem.bench.<name>`
has one set of options: the two entry points cannot drift apart."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tunemem.cli.app import app

BENCH = Path(__file__).resolve().parents[2] / "tunemem" / "bench"
# `python -m tunemem.bench.<name>`: the packages with a __main__.
RUNNABLE = sorted(p.parent.name for p in BENCH.glob("*/__main__.py"))
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def entry(name: str) -> str:
    """The module whose `main` `python -m tunemem.bench.<name>` runs."""
    tree = ast.parse((BENCH / name / "__main__.py").read_text())
    (module,) = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == "main" for a in node.names)
    ]
    assert module is not None
    return module


def module_options(name: str) -> set[str]:
    """The options `python -m tunemem.bench.<name> --help` lists."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit) as exit_:
        importlib.import_module(entry(name)).main(["--help"])
    assert exit_.value.code == 0
    return set(OPTION.findall(shown.getvalue())) - {"--help"}


def cli_options(name: str) -> set[str]:
    """The options `tunemem bench <name> --help` lists."""
    result = CliRunner().invoke(app, ["bench", name, "--help"])
    assert result.exit_code == 0, result.output
    return set(OPTION.findall(result.output)) - {"--help"}


def test_the_runnable_benchmarks_are_the_ones_found() -> None:
    assert RUNNABLE == ["autotune", "kernels", "live", "moe"]


@pytest.mark.parametrize("name", RUNNABLE)
def test_both_entry_points_take_the_same_options(name: str) -> None:
    options = module_options(name)
    assert "--out" in options
    assert cli_options(name) == options


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_command_hands_its_arguments_to_the_module(name: str, monkeypatch) -> None:
    """What follows `tunemem bench <name>` reaches the module's `main` as it was typed."""
    seen: list[list[str]] = []
    module = importlib.import_module(entry(name))
    monkeypatch.setattr(module, "main", lambda argv: seen.append(argv))
    argv = ["--out", "x y", "--unknown-later", "7"]
    result = CliRunner().invoke(app, ["bench", name, *argv])
    assert result.exit_code == 0, result.output
    assert seen == [argv]
