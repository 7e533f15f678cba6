"""`tunemem export` and `tunemem import`: a tenant's data as one JSON Lines bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memory_service.cli.common import DataDirOpt, console, fail, open_local, run_guarded


def export_cmd(
    path: Annotated[Path, typer.Argument(help="bundle to write (.jsonl or .jsonl.gz)")],
    data_dir: DataDirOpt = None,
) -> None:
    """Export lessons, runs, retrievals and the outcome log of the embedded store."""
    counts = run_guarded(lambda: open_local(data_dir).export(path))
    console.print(f"exported {counts} to {path}")


def import_cmd(
    path: Annotated[Path, typer.Argument(help="bundle written by `tunemem export`")],
    data_dir: DataDirOpt = None,
) -> None:
    """Import a bundle into the embedded store (idempotent); values are rebuilt from its log."""
    if not path.exists():
        fail(f"no such file: {path}")
    counts = run_guarded(lambda: open_local(data_dir).import_bundle(path))
    console.print(f"imported {counts}")
