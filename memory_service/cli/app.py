"""The `tunemem` command line: the command groups assembled into one Typer app.

Every command works against the embedded store in TUNEMEM_DATA_DIR (default ./.tunemem), or
against a running server when given --url. Errors print one line and exit non-zero. Each
group lives in its own module beside this one; this module only assembles them.
"""

from __future__ import annotations

import typer

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
)

app = typer.Typer(
    help="tunemem: value-driven memory for kernel-tuning agents.", no_args_is_help=True
)
app.command()(serve.serve)
app.command()(learning.retrieve)
app.command()(learning.report)
app.command()(suggest.suggest)
app.add_typer(lessons.lessons_app, name="lessons")
app.add_typer(maintenance.values_app, name="values")
app.command()(maintenance.reindex)
app.command("migrate")(maintenance.migrate_cmd)
app.command("export")(bundles.export_cmd)
app.command("import")(bundles.import_cmd)
app.command(name="ingest")(ingest.ingest)
app.command(name="mcp")(mcp.mcp)
app.add_typer(bench.bench_app, name="bench")
app.add_typer(keys.keys_app, name="keys")
app.add_typer(audit.audit_app, name="audit")


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
