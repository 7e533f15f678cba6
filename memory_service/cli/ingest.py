"""`tunemem ingest`: read past runs in any supported format, store them and their lessons."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memory_service.cli.common import DataDirOpt, UrlOpt, console, err, fail, open_local
from memory_service.core.models import IngestSummary


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders to ingest")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto, native, kerneltuner, t4, vllm-moe, kernelbench-timing, "
            "kernelbench-run, triton-autotune, openevolve",
        ),
    ] = "auto",
    batch_size: Annotated[int | None, typer.Option(help="trajectories per commit")] = None,
    rejects: Annotated[
        Path | None, typer.Option(help="where to write rejected records (JSONL)")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="no progress bar")] = False,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Ingest tuning runs; re-running the same input adds nothing."""
    from ingest.readers import READERS, iter_paths, read_any

    if fmt != "auto" and fmt not in READERS:
        fail(f"unknown format {fmt!r}; valid: auto, {', '.join(READERS)}")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    sources = list(iter_paths(paths))
    start = time.perf_counter()
    summary = IngestSummary()
    if url:
        summary = _ingest_remote(url, sources, fmt, quiet)
    else:
        service = open_local(data_dir, batch_size=batch_size)
        with Progress(
            TextColumn("[bold]ingest[/bold] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[records]} records"),
            TimeElapsedColumn(),
            console=err,
            disable=quiet,
            transient=False,
        ) as progress:
            task = progress.add_task("", total=len(sources), records=0)
            seen = 0

            def tick(_record: object) -> None:
                nonlocal seen
                seen += 1
                progress.update(task, records=seen)

            for source in sources:
                progress.update(task, description=source.name[:40])
                part = service.ingest(read_any([source], fmt=fmt), progress=tick)
                _merge(summary, part)
                progress.advance(task)
    elapsed = time.perf_counter() - start
    _print_summary(summary, elapsed)
    if summary.rejects:
        target = rejects or Path("tunemem-rejects.jsonl")
        with target.open("w") as fh:
            for item in summary.rejects:
                fh.write(json.dumps(item) + "\n")
        console.print(f"{len(summary.rejects)} rejected records written to {target}")
    if summary.read == 0:
        raise typer.Exit(1)


def _merge(total: IngestSummary, part: IngestSummary) -> None:
    for field in (
        "read",
        "added",
        "merged",
        "skipped",
        "rejected",
        "attempts",
        "lessons_added",
        "lessons_merged",
    ):
        setattr(total, field, getattr(total, field) + getattr(part, field))
    total.unknown_chips = sorted(set(total.unknown_chips) | set(part.unknown_chips))
    total.rejects.extend(part.rejects)


def _print_summary(summary: IngestSummary, elapsed: float) -> None:
    console.print(
        f"read {summary.read} trajectories: added {summary.added}, skipped {summary.skipped} "
        f"(already stored), rejected {summary.rejected}; {summary.attempts} attempts stored; "
        f"lessons added {summary.lessons_added}, merged {summary.lessons_merged}; {elapsed:.1f} s"
    )
    if summary.unknown_chips:
        console.print(
            f"unknown chips (ingested with backend scope only): {', '.join(summary.unknown_chips)}"
        )


def _ingest_remote(url: str, sources: list[Path], fmt: str, quiet: bool) -> IngestSummary:
    from ingest.readers import read_any
    from ingest.records import RejectedRecord
    from memory_service.remote import RemoteService

    remote = RemoteService(url)
    summary = IngestSummary()
    for source in sources:
        batch: list[dict] = []
        for record in read_any([source], fmt=fmt):
            if isinstance(record, RejectedRecord):
                summary.rejected += 1
                summary.rejects.append(
                    {"path": record.path, "position": record.position, "reason": record.reason}
                )
                continue
            batch.append(record.to_dict())
            if len(batch) >= 50:
                _merge(summary, remote.ingest_dicts(batch))
                batch = []
        if batch:
            _merge(summary, remote.ingest_dicts(batch))
        if not quiet:
            err.print(f"sent {source}")
    return summary
