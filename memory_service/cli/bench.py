"""`tunemem bench ...`: benchmarks that write a JSON result and a Markdown table under
bench/results/, naming the machine they ran on."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from memory_service.bench import machine
from memory_service.cli import console, err, settings_for

bench_app = typer.Typer(
    help="Benchmarks: ingest, service, learning, kernels.", no_args_is_help=True
)

DEFAULT_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def write_result(out: Path, name: str, result: dict[str, Any], markdown: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(markdown)
    console.print(markdown)
    console.print(f"wrote {out / (name + '.json')} and {out / (name + '.md')}")


@bench_app.command("ingest")
def bench_ingest(
    data: Annotated[Path, typer.Option(help="folder of tuning data")] = DEFAULT_SHARED,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("bench/results"),
    index: Annotated[str, typer.Option(help="vector index: chroma or memory")] = "chroma",
    embedder: Annotated[
        list[str], typer.Option(help="embedders to compare, side by side (minilm, hashing)")
    ] = ["minilm", "hashing"],  # noqa: B006
) -> None:
    """Ingest a folder into an empty store once per embedder; report attempts/s, lessons/s."""
    from ingest.readers import iter_paths

    if not data.exists():
        err.print(f"error: {data} not found")
        raise typer.Exit(2)
    sources = list(iter_paths([data]))
    rows = [_ingest_once(sources, index, kind) for kind in embedder]
    result = {
        "benchmark": "ingest",
        "command": f"tunemem bench ingest --data {data} --index {index} "
        + " ".join(f"--embedder {k}" for k in embedder),
        "machine": machine(),
        "sources": len(sources),
        "runs": rows,
    }
    m: dict[str, Any] = machine()
    md = (
        f"# Ingest benchmark\n\nMachine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; "
        f"index {index}; {len(sources)} source files. Command: `{result['command']}`\n\n"
        "| embedder | trajectories | attempts | lessons (merged) | seconds | attempts/s "
        "| lessons/s "
        "| of which embedding s | rerun s (added) |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    for r in rows:
        md += (
            f"| {r['embedder']} | {r['trajectories']} | {r['attempts']} | {r['lessons_added']} "
            f"({r['lessons_merged']}) | {r['seconds']} | {r['attempts_per_s']} "
            f"| {r['lessons_per_s']} "
            f"| {r['embedding_seconds']} | {r['rerun_seconds']} ({r['rerun_added']}) |\n"
        )
    write_result(out, "ingest", result, md)


def _ingest_once(sources: list[Path], index: str, embedder_kind: str) -> dict[str, Any]:
    """One ingest of `sources` into a fresh store; the embedder's own time is measured apart."""
    from ingest.readers import read_any
    from memory_service.embedder import create_embedder
    from memory_service.service import MemoryService

    embedder = create_embedder(embedder_kind)
    embedder.embed(["warm-up"])
    spent = [0.0]
    inner = embedder._encode

    def timed(texts: list[str]) -> Any:
        start = time.perf_counter()
        try:
            return inner(texts)
        finally:
            spent[0] += time.perf_counter() - start

    embedder._encode = timed  # type: ignore[method-assign]
    workdir = Path(tempfile.mkdtemp(prefix="tunemem-bench-"))
    try:
        service = MemoryService(settings_for(workdir, index=index), embedder=embedder)
        start = time.perf_counter()
        summary = service.ingest(read_any(sources))
        elapsed = time.perf_counter() - start
        rerun_start = time.perf_counter()
        again = service.ingest(read_any(sources))
        rerun = time.perf_counter() - rerun_start
        service.close()
    finally:
        embedder._encode = inner  # type: ignore[method-assign]
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "embedder": embedder_kind,
        "trajectories": summary.added,
        "attempts": summary.attempts,
        "lessons_added": summary.lessons_added,
        "lessons_merged": summary.lessons_merged,
        "rejected": summary.rejected,
        "seconds": round(elapsed, 2),
        "embedding_seconds": round(spent[0], 2),
        "attempts_per_s": round(summary.attempts / elapsed, 1),
        "lessons_per_s": round(summary.lessons_added / elapsed, 1),
        "rerun_seconds": round(rerun, 2),
        "rerun_added": again.added,
    }


@bench_app.command("learning")
def bench_learning(
    caches: Annotated[
        Path | None, typer.Option(help="folder of Kernel Tuner caches (one sub-folder per kernel)")
    ] = None,
    sources: Annotated[
        list[Path] | None, typer.Option(help="extra caches used only as sources")
    ] = None,
    seeds: Annotated[int, typer.Option()] = 5,
    budget: Annotated[int, typer.Option()] = 20,
    out: Annotated[Path, typer.Option(help="JSON result path")] = Path(
        "bench/results/learning.json"
    ),
    quick: Annotated[bool, typer.Option("--quick", help="tiny run for smoke tests")] = False,
) -> None:
    """Leave-one-chip-out learning benchmark on recorded search spaces (replay)."""
    from memory_service.bench.learning import run_learning_bench

    run_learning_bench(
        caches=caches or (DEFAULT_SHARED / "kerneltuner"),
        sources=list(sources or []),
        seeds=seeds,
        budget=budget,
        out=out,
        quick=quick,
    )


def _register_service_bench() -> None:
    from memory_service.bench.service import bench_service

    bench_app.command("service")(bench_service)


_register_service_bench()


@bench_app.command("kernels")
def bench_kernels(
    out: Annotated[Path, typer.Option(help="results folder")] = Path("bench/results"),
    quick: Annotated[bool, typer.Option("--quick")] = False,
) -> None:
    """Triton kernels vs torch eager/compile and the hardware limit (needs an NVIDIA GPU)."""
    from kernels.bench import run_kernel_bench

    run_kernel_bench(out, quick=quick)
