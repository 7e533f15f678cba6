"""`tunemem ingest`: read past runs in any supported format, store them and their lessons."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    UrlOpt,
    console,
    err,
    fail,
    open_local,
    open_service,
    run_guarded,
    settings_for,
)
from tunemem.ingest.readers import READERS, iter_paths, read_any
from tunemem.memory_service.core.schemas.ingest import IngestSummary
from tunemem.memory_service.protocol import MemoryAPI


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders to ingest")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help=", ".join(["auto", *READERS]),  # the readers' registry, in detection order
        ),
    ] = "auto",
    batch_size: Annotated[int | None, typer.Option(help="trajectories per commit")] = None,
    rejects: Annotated[
        Path | None,
        typer.Option(
            help="where to write rejected records (JSONL); default a new file per run in the "
            "data directory, <data dir>/rejects/ingest-<UTC time>.jsonl"
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="no progress bar")] = False,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Ingest tuning runs; re-running the same input adds nothing."""
    if fmt != "auto" and fmt not in READERS:
        fail(f"unknown format {fmt!r}; valid: auto, {', '.join(READERS)}")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    target = rejects or default_rejects_path(settings_for(data_dir).data_dir)
    if rejects is None:
        target.parent.mkdir(parents=True, exist_ok=True)
    problem = _unwritable(target)
    if problem:
        fail(f"--rejects {target} cannot be written ({problem}); nothing was ingested")
    sources = list(iter_paths(paths))
    start = time.perf_counter()
    summary = IngestSummary()
    memory: MemoryAPI = (
        open_service(url, data_dir, api_key=api_key)
        if url
        else open_local(data_dir, batch_size=batch_size)
    )
    limit = settings_for(data_dir).ingest_max_file_bytes
    try:
        with memory:
            run_guarded(lambda: _ingest_sources(memory, sources, fmt, quiet, summary, limit))
    except KeyboardInterrupt:
        _print_summary(summary, time.perf_counter() - start)
        _write_rejects(summary, target)
        fail(
            "interrupted: what was stored before is kept; run the same command again to go "
            "on (what is stored already is skipped, so nothing is counted twice)",
            code=130,
        )
    elapsed = time.perf_counter() - start
    _print_summary(summary, elapsed)
    _write_rejects(summary, target)
    if summary.read == 0:
        raise typer.Exit(1)


def default_rejects_path(data_dir: Path) -> Path:
    """A new file per run, in the data directory (ignored by git, never the working tree's)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return data_dir / "rejects" / f"ingest-{stamp}.jsonl"


def _write_rejects(summary: IngestSummary, target: Path) -> None:
    if not summary.rejects:
        return
    try:
        with target.open("w") as fh:
            for item in summary.rejects:
                fh.write(json.dumps(item) + "\n")
    except OSError as exc:
        fail(f"--rejects {target} cannot be written ({exc.strerror or exc}); ingested as above")
    console.print(f"{len(summary.rejects)} rejected records written to {target}")


def _unwritable(target: Path) -> str | None:
    """Why the rejects file cannot be written, found before anything is ingested (writing
    it is the last step); None when it can. Probes by opening for append, so an existing file
    is left as it is and a new one is removed again."""
    existed = target.exists()
    try:
        with target.open("a"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        target.unlink(missing_ok=True)
    return None


def _ingest_sources(
    memory: MemoryAPI,
    sources: list[Path],
    fmt: str,
    quiet: bool,
    summary: IngestSummary,
    max_file_bytes: int,
) -> None:
    """Ingest file by file under one progress bar, adding each file's counts to `summary`."""
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
        files = 0

        def tick(_record: object) -> None:
            nonlocal seen
            seen += 1
            progress.update(task, records=seen)

        def line() -> str:
            return f"ingest: {files}/{len(sources)} files, {seen} records"

        # A bar draws nothing where the output is no terminal (a log, CI): a line instead,
        # at least every HEARTBEAT_S seconds.
        beat = not quiet and not err.is_terminal
        with heartbeat(line, HEARTBEAT_S) if beat else nullcontext():
            for source in sources:
                progress.update(task, description=source.name[:40])
                records = read_any([source], fmt=fmt, max_file_bytes=max_file_bytes)
                summary.merge(memory.ingest(records, progress=tick))
                progress.advance(task)
                files += 1


HEARTBEAT_S = 5.0


@contextmanager
def heartbeat(line: Callable[[], str], every: float) -> Iterator[None]:
    """Print `line()` (with the time so far) on stderr every `every` seconds while the body
    runs."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            err.print(f"{line()} ({time.monotonic() - started:.0f} s)", markup=False)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


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
