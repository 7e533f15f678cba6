"""The `tunemem` command line: the command groups assembled into one Typer app.

Every command works against the embedded store in TUNEMEM_DATA_DIR (default ./.tunemem), or
against a running server when given --url. Errors print one line and exit non-zero. Each
group lives in its own module beside this one; this module only assembles them.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Annotated

import typer
import typer.core

from memory_service.cli import (
    audit,
    bench,
    bundles,
    ingest,
    keys,
    learning,
    lessons,
    maintenance,
    mcp,
    serve,
    suggest,
    tune,
)

_option_type = typer.core.TyperOption.display_type_rich


def _flag_type(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
    """A flag (`--json`, `--correct/--incorrect`) takes no value: help shows no type for it."""
    return None if self.is_flag else _option_type(self, ctx)


typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign,assignment]

app = typer.Typer(
    help="tunemem: value-driven memory for kernel-tuning agents.", no_args_is_help=True
)


def tunemem_version() -> str:
    try:
        return package_version("tunemem")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tunemem {tunemem_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    """tunemem: value-driven memory for kernel-tuning agents."""


app.command()(serve.serve)
app.command()(learning.retrieve)
app.command()(learning.report)
app.command()(suggest.suggest)
app.add_typer(lessons.lessons_app, name="lessons")
app.add_typer(maintenance.values_app, name="values")
app.command()(maintenance.reindex)
app.command("migrate")(maintenance.migrate_cmd)
app.command("doctor")(maintenance.doctor)
app.command("export")(bundles.export_cmd)
app.command("import")(bundles.import_cmd)
app.command(name="ingest")(ingest.ingest)
app.command(name="mcp")(mcp.mcp)
app.add_typer(bench.bench_app, name="bench")
app.add_typer(keys.keys_app, name="keys")
app.add_typer(audit.audit_app, name="audit")
app.add_typer(tune.tune_app, name="tune")


def _register_agent() -> None:
    """The agent group needs the agent extras (LangGraph); without them it is left out."""
    try:
        from memory_service.cli import agent
    except ImportError:  # pragma: no cover - agent extras missing
        return
    app.add_typer(agent.agent_app, name="agent")


_register_agent()


def main() -> None:
    app(prog_name="tunemem")


if __name__ == "__main__":  # pragma: no cover
    main()
