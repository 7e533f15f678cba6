"""`tunemem values rebuild` and `tunemem reindex`: rebuild derived state from SQL."""

from __future__ import annotations

import typer

from memory_service.cli.common import DataDirOpt, UrlOpt, console, open_service, run_guarded

values_app = typer.Typer(help="Lesson values (a view of the outcome log).", no_args_is_help=True)


@values_app.command("rebuild")
def values_rebuild(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Recompute every lesson value from the append-only outcome log."""
    n = run_guarded(lambda: open_service(url, data_dir).rebuild_values())
    console.print(f"rebuilt values from {n} outcomes")


def reindex(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Rebuild the vector index from the SQL store."""
    n = run_guarded(lambda: open_service(url, data_dir).reindex())
    console.print(f"indexed {n} lessons")
