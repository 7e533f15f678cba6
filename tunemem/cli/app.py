"""The `tunemem` command line: the command groups assembled into one Typer app.

Every command works against the embedded store in TUNEMEM_DATA_DIR (default ./.tunemem), or
against a running server when given --url. Errors print one line and exit non-zero. Each
group lives in its own module beside this one; this module only assembles them, from one
table. The entry point builds only the command it was asked for (importing one group's module
and turning one group into click commands, not all of them), so that a command through --url
answers in well under a second; `tunemem`, `--help` and anything unknown build the whole app.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Annotated, Any

import typer
import typer.core

_option_type = typer.core.TyperOption.display_type_rich


def _flag_type(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
    """A flag (`--json`, `--correct/--incorrect`) takes no value: help shows no type for it."""
    return None if self.is_flag else _option_type(self, ctx)


typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign,assignment]


@dataclass(frozen=True)
class Entry:
    """One top-level command: the module beside this one that holds it and its attribute,
    a Typer group (`group`) or a command function."""

    module: str
    attribute: str
    group: bool = False
    optional: bool = False  # needs extras (LangGraph for the agent): left out without them


COMMANDS: dict[str, Entry] = {
    "serve": Entry("serve", "serve"),
    "retrieve": Entry("learning", "retrieve"),
    "report": Entry("learning", "report"),
    "suggest": Entry("suggest", "suggest"),
    "lessons": Entry("lessons", "lessons_app", group=True),
    "values": Entry("maintenance", "values_app", group=True),
    "reindex": Entry("maintenance", "reindex"),
    "migrate": Entry("maintenance", "migrate_cmd"),
    "doctor": Entry("maintenance", "doctor"),
    "export": Entry("bundles", "export_cmd"),
    "import": Entry("bundles", "import_cmd"),
    "ingest": Entry("ingest", "ingest"),
    "mcp": Entry("mcp", "mcp"),
    "bench": Entry("bench", "bench_app", group=True),
    "keys": Entry("keys", "keys_app", group=True),
    "audit": Entry("audit", "audit_app", group=True),
    "tune": Entry("tune", "tune_app", group=True),
    "capture": Entry("capture", "capture"),
    "moe": Entry("moe", "moe_app", group=True),
    "agent": Entry("agent", "agent_app", group=True, optional=True),
}


def tunemem_version() -> str:
    try:
        return package_version("tunemem")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tunemem {tunemem_version()}")
        raise typer.Exit()


def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    """tunemem: value-driven memory for kernel-tuning agents."""


def build(only: str | None = None) -> typer.Typer:
    """The app with every command, or with `only` that one (its help and errors are the same:
    a group keeps its own name under `tunemem`)."""
    root = typer.Typer(
        help="tunemem: value-driven memory for kernel-tuning agents.", no_args_is_help=True
    )
    root.callback()(_main)
    for name, entry in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            module = import_module(f"tunemem.cli.{entry.module}")
            target: Any = getattr(module, entry.attribute)
        except ImportError:
            if entry.optional:  # pragma: no cover - agent extras missing
                continue
            raise
        if entry.group:
            root.add_typer(target, name=name)
        else:
            root.command(name)(target)
    return root


_app: typer.Typer | None = None


def __getattr__(name: str) -> typer.Typer:
    """`app`, the whole app, built on first use (tests and `python -m` take it from here)."""
    global _app
    if name != "app":
        raise AttributeError(name)
    if _app is None:
        _app = build()
    return _app


def main() -> None:
    first = sys.argv[1] if len(sys.argv) > 1 else None
    build(first if first in COMMANDS else None)(prog_name="tunemem")


if __name__ == "__main__":  # pragma: no cover
    main()
