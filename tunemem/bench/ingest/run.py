"""`tunemem bench ingest`: ingest a folder of tuning data into an empty store per embedder
and report trajectories, attempts and lessons per second (and the rerun, which must add
nothing). The model's own time is measured apart. Each embedder runs twice: `cold`, with an
empty embedding cache, and `warm`, into another empty store that shares the first one's
embedding cache (what a re-ingest, a reindex or an import of known lessons costs)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tunemem.bench.common.results import machine, memory_held, provenance, write_result
from tunemem.ingest.readers import iter_paths, read_any
from tunemem.memory_service.core.embedding.factory import create_embedder
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.service import MemoryService


def run_ingest_bench(data: Path, out: Path, index: str, embedder: list[str]) -> dict[str, Any]:
    """Run the benchmark on `data` and write out/ingest.json and out/ingest.md."""
    sources = list(iter_paths([data]))
    load_before = round(os.getloadavg()[0], 2)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-cache-") as caches:
        for kind in embedder:
            cache = Path(caches) / f"{kind}.sqlite"
            rows.append(_ingest_once(sources, index, kind, cache, "cold"))
            rows.append(_ingest_once(sources, index, kind, cache, "warm"))
    load = [load_before, round(os.getloadavg()[0], 2)]
    result: dict[str, Any] = {
        "benchmark": "ingest",
        "memory_held": memory_held("none", "each run ingests into an empty store"),
        **provenance(
            f"tunemem bench ingest --data {data} --index {index} "
            + " ".join(f"--embedder {k}" for k in embedder),
            seeds=[0],  # nothing is drawn at random; the one run is seed 0
            kind="measured",
        ),
        "sources": len(sources),
        "load_average_1min": load,
        "runs": rows,
    }
    m: dict[str, Any] = machine()
    md = (
        f"# Ingest benchmark\n\nMachine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; "
        f"index {index}; {len(sources)} source files; load average (1 min) before and after: "
        f"{load[0]} → {load[1]} (the machine may be shared with other work). "
        f"Command: `{result['command']}`\n\n"
        "Embedding cache: `cold` starts empty; `warm` is another empty store sharing the cold "
        "run's cache of lesson embeddings (by model and text hash, bit-identical vectors).\n\n"
        "| embedder | cache (hits) | trajectories | attempts | lessons (merged) | seconds "
        "| attempts/s | lessons/s | of which model s | rerun s (added) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    for r in rows:
        md += (
            f"| {r['embedder']} | {r['cache']} ({r['cache_hits']}) | {r['trajectories']} "
            f"| {r['attempts']} | {r['lessons_added']} "
            f"({r['lessons_merged']}) | {r['seconds']} | {r['attempts_per_s']} "
            f"| {r['lessons_per_s']} "
            f"| {r['embedding_seconds']} | {r['rerun_seconds']} ({r['rerun_added']}) |\n"
        )
    write_result(out, "ingest", result, md)
    return result


def _ingest_once(
    sources: list[Path], index: str, embedder_kind: str, cache: Path, label: str
) -> dict[str, Any]:
    """One ingest of `sources` into a fresh store; the model's own time is measured apart."""
    embedder = create_embedder(embedder_kind)
    embedder.embed(["warm-up"])
    model = embedder
    while hasattr(model, "inner"):
        model = model.inner
    spent = [0.0]
    inner = model._encode

    def timed(texts: list[str]) -> Any:
        start = time.perf_counter()
        try:
            return inner(texts)
        finally:
            spent[0] += time.perf_counter() - start

    model._encode = timed  # type: ignore[method-assign]
    workdir = Path(tempfile.mkdtemp(prefix="tunemem-bench-"))
    try:
        settings = Settings(data_dir=workdir, index=index, embedding_cache=str(cache))
        service = MemoryService(settings, embedder=embedder)
        start = time.perf_counter()
        summary = service.ingest(read_any(sources))
        elapsed = time.perf_counter() - start
        rerun_start = time.perf_counter()
        again = service.ingest(read_any(sources))
        rerun = time.perf_counter() - rerun_start
        hits = getattr(service.embedder, "hits", 0)
        service.close()
    finally:
        model._encode = inner  # type: ignore[method-assign]
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "embedder": embedder_kind,
        "cache": label,
        "cache_hits": hits,
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
