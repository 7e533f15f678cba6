"""`tunemem bench service`: retrieve/report latency and throughput over HTTP at scale.

For each store size and index kind, a fresh store is bulk-loaded with SYNTHETIC lessons and
values (`service_store`), then a real uvicorn server in a thread serves `create_app(service)`
and client threads drive it with retrieve+report pairs (`service_load`). Each case runs in a
child interpreter so its peak RSS is its own. The result names the machine and is written as
bench/results/service.json and service.md.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from bench import machine, write_result
from bench.service_load import (
    ServerThread,
    drive,
    hot_queries,
    percentiles,
    query_body,
    request_plan,
    rss_mb,
)
from bench.service_store import SYNTHETIC_NOTE, build_store


def run_case(
    size: int,
    index_kind: str,
    requests: int,
    concurrency: int,
    seed: int,
    fresh_fraction: float,
    value_fraction: float,
    database_url: str | None = None,
    index_url: str | None = None,
    analyze: bool = False,
) -> dict[str, Any]:
    """Build one store and measure it; runs in its own process when called by the bench."""
    from memory_service.core.embedder import create_embedder
    from memory_service.core.settings import Settings
    from memory_service.service import MemoryService

    mode = "server" if database_url or index_url else "embedded"
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-service-") as workdir:
        settings = Settings(
            data_dir=Path(workdir),
            index=index_kind,
            embedder="hashing",
            database_url=database_url,
            index_url=index_url,
            tenant=f"bench-{uuid.uuid4().hex[:8]}" if mode == "server" else "default",
        )
        service = MemoryService(settings, embedder=create_embedder("hashing"))
        build = build_store(service, size, seed, value_fraction)
        if analyze:  # planner statistics, so SQLite picks the primary key for `id IN (...)`
            with service.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
        rss_built, _ = rss_mb()
        load_before = os.getloadavg()[0]
        server = ServerThread(service)
        try:
            warm = [{"body": q, "cached": False} for q in hot_queries(seed)]
            drive(server.url, warm, concurrency, seed)
            plan = request_plan(requests, fresh_fraction, seed)
            samples, wall = drive(server.url, plan, concurrency, seed + 1)
        finally:
            server.close()
            if mode == "server":  # leave the shared Chroma collection as it was found
                _drop_from_index(service)
            service.close()
    rss_now, rss_peak = rss_mb()
    ok = [s for s in samples if s["ok"]]
    by = {ep: [s["ms"] for s in ok if s["endpoint"] == ep] for ep in ("retrieve", "report")}
    return {
        "lessons": size,
        "index": index_kind,
        "mode": mode,
        "build": build,
        "requests": len(samples),
        "errors": len(samples) - len(ok),
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(samples) / wall, 1) if wall else 0.0,
        "pairs_per_s": round(len(by["report"]) / wall, 1) if wall else 0.0,
        "retrieve_ms": percentiles(by["retrieve"]),
        "report_ms": percentiles(by["report"]),
        "retrieve_cached_ms": percentiles(
            [s["ms"] for s in ok if s["endpoint"] == "retrieve" and s["cached"]]
        ),
        "retrieve_fresh_ms": percentiles(
            [s["ms"] for s in ok if s["endpoint"] == "retrieve" and not s["cached"]]
        ),
        "sql_analyzed": analyze,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "rss_after_build_mb": rss_built,
        "rss_end_mb": rss_now,
        "peak_rss_mb": rss_peak,
    }


def _drop_from_index(service: Any) -> None:
    """Remove this case's tenant from the vector index (its SQL rows stay, as history)."""
    from sqlmodel import Session, select

    from memory_service.core.schema import Lesson

    with Session(service.engine) as session:
        ids = list(session.exec(select(Lesson.id).where(Lesson.tenant == service.settings.tenant)))
    for start in range(0, len(ids), 4000):
        service.index.delete(ids[start : start + 4000])


def _code_version() -> str | None:
    """The git commit the bench ran on, when run from a checkout."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _case_in_child(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run one case in a fresh interpreter (not multiprocessing: it would re-import __main__)."""
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-case-") as tmp:
        result_path = Path(tmp) / "case.json"
        code = (
            "import json, sys; from bench.service import run_case; "
            "open(sys.argv[2], 'w').write(json.dumps(run_case(**json.loads(sys.argv[1]))))"
        )
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(kwargs), str(result_path)], check=True
        )
        return json.loads(result_path.read_text())  # type: ignore[no-any-return]


def minilm_query_ms(queries: int = 20, seed: int = 0) -> dict[str, Any]:
    """Latency of embedding one fresh query with the default MiniLM embedder (no cache)."""
    try:
        from memory_service.core.embedder import MiniLMEmbedder

        model = MiniLMEmbedder()
    except (ImportError, FileNotFoundError) as exc:
        return {"available": False, "reason": str(exc)}
    rng = random.Random(seed)
    model.embed(["warm-up"])
    times = []
    for i in range(queries):
        text = query_body(rng, i)["query"]
        t0 = time.perf_counter()
        model.embed([text])
        times.append(1000 * (time.perf_counter() - t0))
    return {"available": True, **percentiles(times)}


# ------------------------------------------------------------------ the bench
def run_service_bench(
    sizes: list[int],
    out: Path | None,
    index_kinds: list[str],
    requests: int = 400,
    concurrency: int = 4,
    *,
    seed: int = 0,
    fresh_fraction: float = 0.5,
    value_fraction: float = 0.25,
    database_url: str | None = None,
    index_url: str | None = None,
    isolate: bool = True,
    probe_minilm: bool = True,
    analyze: bool = False,
    name: str = "service",
) -> dict[str, Any]:
    """Measure every (size, index kind) and, given server URLs, the server mode too.

    Args:
        sizes: store sizes in lessons.
        out: results folder for the JSON and Markdown results; None writes nothing.
        index_kinds: embedded index kinds to measure (memory, chroma).
        requests: retrieve+report pairs per case.
        concurrency: client threads.
        seed: seed of the synthetic store and the request plan.
        fresh_fraction: share of requests whose query text is new (embedded on the request).
        value_fraction: share of lessons given synthetic LessonValue rows.
        database_url: a PostgreSQL (or other SQLAlchemy) URL for the server mode.
        index_url: a Chroma server URL for the server mode (index chroma-http).
        isolate: run each case in a child process, so peak RSS belongs to that case.
        probe_minilm: also time single fresh-query embeddings with the MiniLM model.
        analyze: run SQL ANALYZE after the bulk load (the service itself never does).
        name: file stem of the results (name.json, name.md).

    Returns:
        The result document (also written as JSON when `out` is given).
    """
    embedded_kinds = [k for k in index_kinds if k != "none"]
    cases = [dict(size=s, index_kind=k) for s in sizes for k in embedded_kinds]
    if database_url or index_url:
        cases += [
            dict(
                size=s,
                index_kind="chroma-http" if index_url else "memory",
                database_url=database_url,
                index_url=index_url,
            )
            for s in sizes
        ]
    common = dict(
        requests=requests,
        concurrency=concurrency,
        seed=seed,
        fresh_fraction=fresh_fraction,
        value_fraction=value_fraction,
        analyze=analyze,
    )
    runs = []
    for position, case in enumerate(cases, 1):
        kwargs: dict[str, Any] = {**case, **common}
        print(f"service bench case {position}/{len(cases)}: {case}", file=sys.stderr, flush=True)
        if isolate:
            runs.append(_case_in_child(kwargs))
        else:
            runs.append(run_case(**kwargs))
    result: dict[str, Any] = {
        "benchmark": "service",
        "synthetic": SYNTHETIC_NOTE,
        "command": "tunemem bench service "
        + " ".join(
            [f"--sizes {s}" for s in sizes]
            + [f"--index {k}" for k in index_kinds]
            + [f"--requests {requests}", f"--concurrency {concurrency}"]
            + (["--analyze"] if analyze else [])
            + ([f"--database-url '{database_url}'"] if database_url else [])
            + ([f"--index-url {index_url}"] if index_url else [])
            + ([f"--name {name}"] if name != "service" else [])
        ),
        "machine": machine(),
        "code_version": _code_version(),
        "settings": {
            **common,
            "embedder": "hashing (512-d)",
            "hot_queries": 32,
            "client": "httpx threads in the server's process",
            "server": "uvicorn, one process, in-process thread",
        },
        "server_mode": "measured"
        if (database_url or index_url)
        else "not measured: no --database-url/--index-url given (PostgreSQL + Chroma server)",
        "minilm_query_embed_ms": minilm_query_ms(seed=seed) if probe_minilm else None,
        "runs": runs,
    }
    if out is not None:
        write_result(out, name, result, markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown report with one table row per case."""
    m = result["machine"]
    lines = [
        "# Service benchmark",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB. "
        f"Command: `{result['command']}` (code {result.get('code_version')})",
        "",
        f"Data: {result['synthetic']}",
        "",
        "Each request pair is POST /v1/retrieve then POST /v1/outcomes over HTTP (uvicorn, "
        f"one process; httpx client threads in the same process). Server mode: "
        f"{result['server_mode']}. SQL ANALYZE after loading: "
        f"{'yes' if result['settings']['analyze'] else 'no (as the service runs)'}. Load 1 min "
        "is the machine's load average before and after the measured requests.",
        "",
        "| lessons | index | mode | build s (lessons/s) | retrieve p50/p95/p99 ms "
        "| retrieve p50 cached / fresh ms | report p50/p95/p99 ms | requests/s | pairs/s "
        "| errors | peak RSS MB | load 1 min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        ret, rep = r["retrieve_ms"], r["report_ms"]
        lines.append(
            f"| {r['lessons']:,} | {r['index']} | {r['mode']} | {r['build']['build_s']} "
            f"({r['build']['lessons_per_s']:,}) | {ret.get('p50')} / {ret.get('p95')} / "
            f"{ret.get('p99')} | {r['retrieve_cached_ms'].get('p50')} / "
            f"{r['retrieve_fresh_ms'].get('p50')} | {rep.get('p50')} / {rep.get('p95')} / "
            f"{rep.get('p99')} | {r['requests_per_s']} | {r['pairs_per_s']} | {r['errors']} "
            f"| {r['peak_rss_mb']:,} | {' → '.join(map(str, r['load_average_1min']))} |"
        )
    probe = result.get("minilm_query_embed_ms")
    if probe and probe.get("available"):
        lines += [
            "",
            f"Fresh queries embed with the hashing embedder here; with the default "
            f"MiniLM model one fresh query embedding takes p50 {probe['p50']} ms, "
            f"p95 {probe['p95']} ms on this machine (added to a fresh retrieve).",
        ]
    lines += ["", "Build time splits into generate / embed / SQL / index seconds in the JSON."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ CLI
def bench_service(
    sizes: Annotated[list[int], typer.Option("--sizes", help="store sizes in lessons")] = [  # noqa: B006
        10_000,
        100_000,
    ],
    index: Annotated[
        list[str],
        typer.Option(
            "--index", help="embedded index kinds: memory, chroma; none: server mode only"
        ),
    ] = [  # noqa: B006
        "memory",
        "chroma",
    ],
    requests: Annotated[int, typer.Option(help="retrieve+report pairs per case")] = 400,
    concurrency: Annotated[int, typer.Option(help="client threads")] = 4,
    fresh_fraction: Annotated[float, typer.Option(help="share of fresh query texts")] = 0.5,
    database_url: Annotated[
        str | None, typer.Option(help="server mode: PostgreSQL URL (throwaway database)")
    ] = None,
    index_url: Annotated[str | None, typer.Option(help="server mode: Chroma server URL")] = None,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("bench/results"),
    name: Annotated[str, typer.Option(help="results file stem")] = "service",
    seed: Annotated[int, typer.Option()] = 0,
    analyze: Annotated[
        bool, typer.Option("--analyze", help="run SQL ANALYZE after loading the store")
    ] = False,
) -> None:
    """Retrieve/report latency (p50/p95/p99), throughput and memory at scale, over HTTP."""
    run_service_bench(
        sizes,
        out,
        index,
        requests,
        concurrency,
        seed=seed,
        fresh_fraction=fresh_fraction,
        analyze=analyze,
        name=name,
        database_url=database_url,
        index_url=index_url,
    )
