"""`tunemem bench ...`: benchmarks that write a JSON result and a Markdown table under
bench/results/, naming the machine they ran on."""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from memory_service.cli import console, err, settings_for

bench_app = typer.Typer(help="Benchmarks: ingest, service, learning, kernels.", no_args_is_help=True)

DEFAULT_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "python": platform.python_version(), "os": platform.platform()}


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
) -> None:
    """Ingest a whole folder into an empty store; report attempts/s and lessons/s."""
    import resource

    from ingest.readers import iter_paths, read_any
    from memory_service.service import MemoryService

    if not data.exists():
        err.print(f"error: {data} not found")
        raise typer.Exit(2)
    workdir = Path(tempfile.mkdtemp(prefix="tunemem-bench-"))
    try:
        service = MemoryService(settings_for(workdir, index=index))
        service.embedder.embed(["warm-up"])
        sources = list(iter_paths([data]))
        start = time.perf_counter()
        summary = service.ingest(read_any(sources))
        elapsed = time.perf_counter() - start
        rerun_start = time.perf_counter()
        again = service.ingest(read_any(sources))
        rerun = time.perf_counter() - rerun_start
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "benchmark": "ingest",
        "command": f"tunemem bench ingest --data {data} --index {index}",
        "machine": machine(),
        "sources": len(sources),
        "trajectories": summary.added,
        "attempts": summary.attempts,
        "lessons_added": summary.lessons_added,
        "lessons_merged": summary.lessons_merged,
        "rejected": summary.rejected,
        "seconds": round(elapsed, 2),
        "attempts_per_s": round(summary.attempts / elapsed, 1),
        "lessons_per_s": round(summary.lessons_added / elapsed, 1),
        "rerun_seconds": round(rerun, 2),
        "rerun_added": again.added,
        "max_rss_mb": round(rss_mb, 1),
    }
    m = result["machine"]
    md = (
        f"# Ingest benchmark\n\nMachine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; "
        f"index {index}. Command: `{result['command']}`\n\n"
        "| sources | trajectories | attempts | lessons | seconds | attempts/s | lessons/s | rerun s (added) | max RSS MB |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        f"| {len(sources)} | {summary.added} | {summary.attempts} | {summary.lessons_added} "
        f"(+{summary.lessons_merged} merged) | {result['seconds']} | {result['attempts_per_s']} | "
        f"{result['lessons_per_s']} | {result['rerun_seconds']} ({again.added}) | {result['max_rss_mb']} |\n"
    )
    write_result(out, "ingest", result, md)


@bench_app.command("learning")
def bench_learning(
    caches: Annotated[Optional[Path], typer.Option(help="folder of Kernel Tuner caches (one sub-folder per kernel)")] = None,
    sources: Annotated[Optional[list[Path]], typer.Option(help="extra caches used only as sources")] = None,
    seeds: Annotated[int, typer.Option()] = 5,
    budget: Annotated[int, typer.Option()] = 20,
    out: Annotated[Path, typer.Option(help="JSON result path")] = Path("bench/results/learning.json"),
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


@bench_app.command("kernels")
def bench_kernels(
    out: Annotated[Path, typer.Option(help="results folder")] = Path("bench/results"),
    quick: Annotated[bool, typer.Option("--quick")] = False,
) -> None:
    """Triton kernels vs torch eager/compile and the hardware limit (needs an NVIDIA GPU)."""
    from kernels.bench import run_kernel_bench

    run_kernel_bench(out, quick=quick)
