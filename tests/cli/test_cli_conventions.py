"""The CLI's conventions, one for every command (issue 28): `--api-key` wherever `--url` is
taken, `--stage` a choice, and the memory a command opens closed when it ends, whether the
command succeeded or failed. Through typer's runner, on a temporary embedded store."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.memory_service.service import MemoryService


def commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """Every leaf command of the app, by its full name."""
    if hasattr(group, "commands"):
        found = []
        for name, child in group.commands.items():
            found.extend(commands(child, (*path, name)))
        return found
    return [(" ".join(path), group)]


def options(command: Any) -> dict[str, Any]:
    return {flag: p for p in command.params for flag in getattr(p, "opts", [])}


def choices(option: Any) -> set[str]:
    """The values a typed option admits (its Literal, through an Optional); empty: free."""
    annotation = option.type_descriptor.annotation
    kinds = [annotation, *typing.get_args(annotation)]  # the type, or the members of a union
    literals = [kind for kind in kinds if typing.get_origin(kind) is typing.Literal]
    return set(typing.get_args(literals[0])) if literals else set()


ALL = commands(typer.main.get_command(app))


def test_every_command_that_takes_url_takes_api_key():
    """Seen failing first: 3 of the 16 commands with --url had --api-key."""
    with_url = [name for name, command in ALL if "--url" in options(command)]
    assert len(with_url) >= 16, with_url
    lacking = [name for name, command in ALL if "--url" in options(command)]
    lacking = [name for name in lacking if "--api-key" not in options(dict(ALL)[name])]
    assert lacking == []


def test_every_stage_option_is_a_choice():
    """Seen failing first: --stage was free text, refused only by the service."""
    staged = [(name, options(c)["--stage"]) for name, c in ALL if "--stage" in options(c)]
    assert {name for name, _ in staged} >= {"retrieve", "suggest", "lessons top", "audit transfer"}
    for name, option in staged:
        assert choices(option) == {"draft", "refine"}, name
    wrong = ["retrieve", "--stage", "polish", "--data-dir", "/nonexistent"]
    refused = CliRunner().invoke(app, wrong)
    assert refused.exit_code == 2 and "'polish' is not one of" in refused.output


@pytest.fixture
def closes(monkeypatch):
    """Counts MemoryService opened and closed (the embedded store a command uses)."""
    seen = {"opened": 0, "closed": 0}
    opened, closed = MemoryService.__init__, MemoryService.close

    def open_counted(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        seen["opened"] += 1

    def close_counted(self):
        seen["closed"] += 1
        closed(self)

    monkeypatch.setattr(MemoryService, "__init__", open_counted)
    monkeypatch.setattr(MemoryService, "close", close_counted)
    monkeypatch.setenv("TUNEMEM_EMBEDDER", "hashing")
    return seen


def test_every_command_closes_the_memory_it_opened(closes, tmp_path: Path):
    """Seen failing first: 13 of 16 call sites of `open_service` never closed the service."""
    store = ["--data-dir", str(tmp_path / "store")]
    lessons = tmp_path / "lessons.json"
    lessons.write_text(
        '{"lessons": [{"kind": "insight", "text": "Use 8 warps for long softmax rows",'
        ' "applicability": {"op": "softmax"}}]}'
    )
    bundle = tmp_path / "bundle.jsonl"
    runs = [
        ["lessons", "add", str(lessons)],
        ["lessons", "list"],
        ["lessons", "stale"],
        ["lessons", "top"],
        ["lessons", "show", "no-such-lesson"],  # fails: closed all the same
        ["lessons", "archive", "no-such-lesson"],
        ["retrieve", "--op", "softmax"],
        ["report", "no-such-retrieval", "--correct"],
        ["suggest", "--space", '{"BLOCK": [64, 128]}', "--op", "softmax"],
        ["audit", "transfer"],
        ["values", "rebuild"],
        ["reindex"],
        ["export", str(bundle)],
        ["import", str(bundle)],
    ]
    runner = CliRunner()
    for args in runs:
        before = dict(closes)
        result = runner.invoke(app, [*args, *store])
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        assert closes["opened"] - before["opened"] == 1, (args, result.output)
        assert closes["closed"] - before["closed"] == 1, (args, result.output)
