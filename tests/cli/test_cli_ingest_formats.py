"""`tunemem ingest --format`: its help is made from the readers' registry, so a reader added to
`READERS` is offered without editing the CLI (a registry entry is all a new format needs there)."""

from __future__ import annotations

import importlib

import typer
from typer.testing import CliRunner

import tunemem.cli.ingest as cli_ingest
from tunemem.ingest.readers import READERS


def _format_help() -> str:
    app = typer.Typer()
    app.command()(cli_ingest.ingest)
    command = typer.main.get_command(app)
    (option,) = [p for p in command.params if p.name == "fmt"]
    return str(option.help)


def test_the_format_help_names_every_registered_reader(monkeypatch) -> None:
    assert _format_help() == ", ".join(["auto", *READERS])
    monkeypatch.setitem(READERS, "synthetic-format", "tunemem.ingest.readers.native")
    try:
        importlib.reload(cli_ingest)
        assert _format_help().endswith(", openevolve, synthetic-format")
    finally:
        monkeypatch.undo()
        importlib.reload(cli_ingest)


def test_an_unknown_format_is_refused_with_the_valid_ones(tmp_path) -> None:
    from tunemem.cli.app import app

    path = tmp_path / "run.json"
    path.write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["ingest", str(path), "--format", "nope", "--data-dir", str(tmp_path / "d")]
    )
    assert result.exit_code != 0
    assert f"valid: {', '.join(['auto', *READERS])}" in result.output
