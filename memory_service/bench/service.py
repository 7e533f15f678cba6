"""`tunemem bench service`: retrieve/report latency and throughput over HTTP at scale.

For each store size and index kind, a fresh store is bulk-loaded with SYNTHETIC lessons
(template texts over ops, chips and tuning parameters; vectors from the hashing embedder, so
a million lessons can be built on a CPU) and synthetic LessonValue rows for a fraction of
them, inserted directly (SQL executemany, index upserts in batches) past the dedup path.
Then a real uvicorn server in a thread serves `create_app(service)` and worker threads drive
it with httpx: each request is a retrieve followed by a report of its outcome. Query texts
are either drawn from a small hot set whose embeddings are cached, or fresh (a unique text,
embedded on the request path). Each case runs in a child process so its peak RSS is its own.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import random
import resource
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

SYNTHETIC_NOTE = (
    "SYNTHETIC lessons (template texts over ops/chips/parameters, hashing-embedder vectors) "
    "and SYNTHETIC value rows; latencies and rates are real measurements of the HTTP path."
)
OPS = ("softmax", "rmsnorm", "layernorm", "gemm", "attention", "fused_moe", "conv2d", "gelu")
CHIPS = ("a100", "h100", "h200", "mi250x", "mi300x", "ascend-910b", "x86-cpu")
DTYPES = ("fp16", "bf16", "fp32", "fp8")
KINDS = ("insight", "insight", "failure", "exemplar", "api")
TEMPLATES = {
    "insight": "On {chip}, {op} in {dtype} runs {ratio:.2f}x faster with BLOCK_SIZE={b} than "
    "with {b2}; num_warps={w} keeps occupancy high for rows of {n} elements.",
    "failure": "{op} on {chip} fails when BLOCK_SIZE={b} and num_stages={s}: shared memory "
    "needs {smem} KB, more than the chip offers per block.",
    "exemplar": "Best {op} configuration on {chip} for {m}x{n} {dtype}: BLOCK_M={bm}, "
    "BLOCK_N={b}, num_warps={w}, num_stages={s}, {lat:.3f} ms.",
    "api": "{backend} note for {op}: load tiles of {b} elements with vectorised loads and "
    "keep the reduction in {dtype} accumulators; {w} warps per program suit {chip}.",
}
STAGES = ("draft", "refine")


@functools.lru_cache(maxsize=64)
def _chip_facts(chip: str) -> tuple[str, list[str]]:
    import platforms

    descriptor = platforms.resolve(chip)
    return descriptor.backend, platforms.scope_chain(descriptor)


# ------------------------------------------------------------------ synthetic store
def synthetic_lessons(start: int, count: int, seed: int) -> list[dict[str, Any]]:
    """Rows of the Lesson table for lessons start..start+count, deterministic per seed."""
    from memory_service.schema import utcnow

    rng = random.Random(seed * 1_000_003 + start)
    now = utcnow()
    rows = []
    for i in range(start, start + count):
        kind, op, chip = rng.choice(KINDS), rng.choice(OPS), rng.choice(CHIPS)
        backend, _ = _chip_facts(chip)
        dtype = rng.choice(DTYPES)
        text = TEMPLATES[kind].format(
            chip=chip, op=op, dtype=dtype, backend=backend, ratio=rng.uniform(1.05, 3.0),
            b=2 ** rng.randint(5, 12), b2=2 ** rng.randint(5, 12), w=2 ** rng.randint(0, 4),
            s=rng.randint(1, 5), n=2 ** rng.randint(8, 16), m=2 ** rng.randint(6, 14),
            bm=2 ** rng.randint(4, 8), smem=rng.randint(64, 400), lat=rng.uniform(0.01, 5.0),
        )
        app = {"op": op, "kernel": None, "chips": [chip], "families": [], "backends": [backend],
               "models": [], "scenarios": [], "dtypes": [dtype]}
        digest = hashlib.sha256(f"synthetic:{seed}:{i}".encode()).hexdigest()
        rows.append({
            "id": str(uuid.UUID(digest[:32])), "tenant": "", "kind": kind, "text": text,
            "hint": None, "code": None, "content_hash": digest, "applicability": app, "op": op,
            "chips": f",{chip},", "backends": f",{backend},",
            "provenance": {"source_format": "synthetic-bench", "synthetic": True},
            "status": "active", "created_at": now, "updated_at": now,
        })
    return rows


def synthetic_values(rows: list[dict[str, Any]], fraction: float, seed: int) -> list[dict]:
    """LessonValue rows (both stages; chip, backend and global scopes) for a fraction of rows."""
    from memory_service.schema import utcnow

    rng = random.Random(seed)
    now = utcnow()
    values = []
    for row in rows:
        if rng.random() >= fraction:
            continue
        chain = _chip_facts(row["chips"].strip(","))[1]
        for stage in STAGES:
            for scope in (chain[0], chain[2], chain[3]):
                n = rng.randint(1, 20)
                q = rng.uniform(-1.0, 1.0)
                values.append({"lesson_id": row["id"], "stage": stage, "scope": scope, "n": n,
                               "q": q, "sumsq": n * (q * q + 0.1), "updated_at": now})
    return values


def build_store(service: Any, size: int, seed: int, value_fraction: float,
                batch: int = 20_000) -> dict[str, float]:
    """Bulk-load `size` synthetic lessons into the service's SQL store and vector index."""
    from sqlalchemy import insert

    from memory_service import lessons as lesson_rows
    from memory_service.schema import Lesson, LessonValue

    spent = {"generate_s": 0.0, "embed_s": 0.0, "sql_s": 0.0, "index_s": 0.0}
    tenant = service.settings.tenant
    n_values = 0
    for start in range(0, size, batch):
        t0 = time.perf_counter()
        rows = synthetic_lessons(start, min(batch, size - start), seed)
        for row in rows:
            row["tenant"] = tenant
        values = synthetic_values(rows, value_fraction, seed + start)
        t1 = time.perf_counter()
        vectors = service.embedder.inner.embed(
            [lesson_rows.embedding_text(r["kind"], r["text"], r["applicability"]) for r in rows]
        )
        t2 = time.perf_counter()
        with service.engine.begin() as conn:
            conn.execute(insert(Lesson.__table__), rows)  # type: ignore[attr-defined]
            if values:
                conn.execute(insert(LessonValue.__table__), values)  # type: ignore[attr-defined]
        t3 = time.perf_counter()
        service.index.upsert(
            [r["id"] for r in rows], vectors,
            [{"tenant": tenant, "kind": r["kind"], "op": r["op"], "backends": r["backends"]}
             for r in rows],
        )
        t4 = time.perf_counter()
        n_values += len(values)
        for key, dt in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            spent[key] += dt
    total = sum(spent.values())
    return {**{k: round(v, 2) for k, v in spent.items()}, "build_s": round(total, 2),
            "lessons_per_s": round(size / total, 1) if total else 0.0, "value_rows": n_values}


# ------------------------------------------------------------------ load
def request_plan(count: int, fresh_fraction: float, seed: int, hot: int = 32) -> list[dict]:
    """Retrieve bodies: a hot set of repeated queries (cached embeddings) and fresh ones."""
    rng = random.Random(seed)
    hot_set = [_query(rng, None) for _ in range(hot)]
    plan = []
    for i in range(count):
        if rng.random() < fresh_fraction:
            plan.append({"body": _query(rng, i), "cached": False})
        else:
            plan.append({"body": rng.choice(hot_set), "cached": True})
    return plan


def _query(rng: random.Random, unique: int | None) -> dict[str, Any]:
    op, chip, dtype = rng.choice(OPS), rng.choice(CHIPS), rng.choice(DTYPES)
    text = f"tune {op} for {dtype} rows of {2 ** rng.randint(8, 16)} elements"
    if unique is not None:  # a text no other request has, so its embedding is never cached
        text += f"; attempt {unique} after BLOCK_SIZE={2 ** rng.randint(5, 12)}"
    return {"query": text, "task": {"op": op, "dtype": dtype}, "context": {"chip": chip},
            "stage": rng.choice(STAGES), "k": 3}


def drive(url: str, plan: list[dict], concurrency: int, seed: int) -> tuple[list[dict], float]:
    """Run the plan (retrieve then report, per item) on `concurrency` threads."""
    import httpx

    samples: list[dict] = []
    lock = threading.Lock()
    items = iter(enumerate(plan))

    def worker() -> None:
        rng = random.Random(seed + threading.get_ident())
        with httpx.Client(base_url=url, timeout=120) as client:
            while True:
                with lock:
                    nxt = next(items, None)
                if nxt is None:
                    return
                _, item = nxt
                t0 = time.perf_counter()
                r = client.post("/v1/retrieve", json=item["body"])
                got = [{"endpoint": "retrieve", "ms": 1000 * (time.perf_counter() - t0),
                        "ok": r.status_code == 200, "cached": item["cached"]}]
                if r.status_code == 200:
                    data = r.json()
                    latency = rng.uniform(0.05, 2.0)
                    outcome = {"compiled": rng.random() < 0.9, "correct": rng.random() < 0.8,
                               "latency_ms": latency, "best_before_ms": latency * rng.uniform(0.8, 1.3)}
                    t1 = time.perf_counter()
                    r2 = client.post("/v1/outcomes", json={
                        "retrieval_id": data["retrieval_id"], "outcome": outcome,
                        "used": [lesson["id"] for lesson in data["lessons"]]})
                    got.append({"endpoint": "report", "ms": 1000 * (time.perf_counter() - t1),
                                "ok": r2.status_code == 200, "cached": item["cached"]})
                with lock:
                    samples.extend(got)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return samples, time.perf_counter() - start


def percentiles(ms: list[float]) -> dict[str, float]:
    """p50/p95/p99 and mean in milliseconds (inclusive quantiles)."""
    if not ms:
        return {"n": 0}
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return {"n": len(ms), "p50": round(cuts[49], 2), "p95": round(cuts[94], 2),
            "p99": round(cuts[98], 2), "mean": round(statistics.fmean(ms), 2)}


def _rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB, from /proc (ru_maxrss as fallback)."""
    status: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                status[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return round(status.get("VmRSS", peak), 1), round(status.get("VmHWM", peak), 1)


class ServerThread:
    """uvicorn serving `create_app(service)` on a free local port, in a daemon thread."""

    def __init__(self, service: Any) -> None:
        import uvicorn

        from memory_service.api import create_app

        config = uvicorn.Config(create_app(service), host="127.0.0.1", port=0,
                                log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the benchmark server did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self._server.servers[0].sockets[0].getsockname()[1]}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


# ------------------------------------------------------------------ one case
def run_case(size: int, index_kind: str, requests: int, concurrency: int, seed: int,
             fresh_fraction: float, value_fraction: float, database_url: str | None = None,
             index_url: str | None = None) -> dict[str, Any]:
    """Build one store and measure it; runs in its own process when called by the bench."""
    from memory_service.embedder import create_embedder
    from memory_service.service import MemoryService
    from memory_service.settings import Settings

    mode = "server" if database_url or index_url else "embedded"
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-service-") as workdir:
        settings = Settings(
            data_dir=Path(workdir), index=index_kind, embedder="hashing",
            database_url=database_url, index_url=index_url,
            tenant=f"bench-{uuid.uuid4().hex[:8]}" if mode == "server" else "default",
        )
        service = MemoryService(settings, embedder=create_embedder("hashing"))
        build = build_store(service, size, seed, value_fraction)
        rss_built, _ = _rss_mb()
        server = ServerThread(service)
        try:
            warm = request_plan(max(concurrency * 4, 8), 0.0, seed)  # fills the hot-set cache
            drive(server.url, warm, concurrency, seed)
            plan = request_plan(requests, fresh_fraction, seed)
            samples, wall = drive(server.url, plan, concurrency, seed + 1)
        finally:
            server.close()
            service.close()
    rss_now, rss_peak = _rss_mb()
    ok = [s for s in samples if s["ok"]]
    by = {ep: [s["ms"] for s in ok if s["endpoint"] == ep] for ep in ("retrieve", "report")}
    return {
        "lessons": size, "index": index_kind, "mode": mode, "build": build,
        "requests": len(samples), "errors": len(samples) - len(ok), "wall_s": round(wall, 2),
        "requests_per_s": round(len(samples) / wall, 1) if wall else 0.0,
        "pairs_per_s": round(len(by["report"]) / wall, 1) if wall else 0.0,
        "retrieve_ms": percentiles(by["retrieve"]), "report_ms": percentiles(by["report"]),
        "retrieve_cached_ms": percentiles(
            [s["ms"] for s in ok if s["endpoint"] == "retrieve" and s["cached"]]),
        "retrieve_fresh_ms": percentiles(
            [s["ms"] for s in ok if s["endpoint"] == "retrieve" and not s["cached"]]),
        "rss_after_build_mb": rss_built, "rss_end_mb": rss_now, "peak_rss_mb": rss_peak,
    }


def _case_in_child(kwargs: dict[str, Any]) -> dict[str, Any]:
    return run_case(**kwargs)


def minilm_query_ms(queries: int = 20, seed: int = 0) -> dict[str, Any]:
    """Latency of embedding one fresh query with the default MiniLM embedder (no cache)."""
    try:
        from memory_service.embedder import MiniLMEmbedder

        model = MiniLMEmbedder()
    except (ImportError, FileNotFoundError) as exc:
        return {"available": False, "reason": str(exc)}
    rng = random.Random(seed)
    model.embed(["warm-up"])
    times = []
    for i in range(queries):
        text = _query(rng, i)["query"]
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
) -> dict[str, Any]:
    """Measure every (size, index kind) and, given server URLs, the server mode too.

    Args:
        sizes: store sizes in lessons.
        out: results folder for service.json and service.md; None writes nothing.
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

    Returns:
        The result document (also written as JSON when `out` is given).
    """
    from memory_service.cli.bench import machine

    cases = [dict(size=s, index_kind=k) for s in sizes for k in index_kinds]
    if database_url or index_url:
        cases += [dict(size=s, index_kind="chroma-http" if index_url else "memory",
                       database_url=database_url, index_url=index_url) for s in sizes]
    common = dict(requests=requests, concurrency=concurrency, seed=seed,
                  fresh_fraction=fresh_fraction, value_fraction=value_fraction)
    runs = []
    for case in cases:
        kwargs = {**case, **common}
        if isolate:
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                runs.append(pool.apply(_case_in_child, (kwargs,)))
        else:
            runs.append(run_case(**kwargs))
    result: dict[str, Any] = {
        "benchmark": "service",
        "synthetic": SYNTHETIC_NOTE,
        "command": "tunemem bench service " + " ".join(
            [f"--sizes {s}" for s in sizes] + [f"--index {k}" for k in index_kinds]
            + [f"--requests {requests}", f"--concurrency {concurrency}"]),
        "machine": machine(),
        "settings": {**common, "embedder": "hashing (512-d)", "hot_queries": 32,
                     "client": "httpx threads in the server's process",
                     "server": "uvicorn, one process, in-process thread"},
        "server_mode": "measured" if (database_url or index_url) else
        "not measured: no --database-url/--index-url given (PostgreSQL + Chroma server)",
        "minilm_query_embed_ms": minilm_query_ms(seed=seed) if probe_minilm else None,
        "runs": runs,
    }
    if out is not None:
        from memory_service.cli.bench import write_result

        write_result(out, "service", result, markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown report with one table row per case."""
    m = result["machine"]
    lines = [
        "# Service benchmark", "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB. "
        f"Command: `{result['command']}`", "",
        f"Data: {result['synthetic']}", "",
        "Each request pair is POST /v1/retrieve then POST /v1/outcomes over HTTP (uvicorn, "
        f"one process; httpx client threads in the same process). Server mode: "
        f"{result['server_mode']}.", "",
        "| lessons | index | mode | build s (lessons/s) | retrieve p50/p95/p99 ms "
        "| retrieve p50 cached / fresh ms | report p50/p95/p99 ms | requests/s | pairs/s "
        "| errors | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        ret, rep = r["retrieve_ms"], r["report_ms"]
        lines.append(
            f"| {r['lessons']:,} | {r['index']} | {r['mode']} | {r['build']['build_s']} "
            f"({r['build']['lessons_per_s']:,}) | {ret.get('p50')} / {ret.get('p95')} / "
            f"{ret.get('p99')} | {r['retrieve_cached_ms'].get('p50')} / "
            f"{r['retrieve_fresh_ms'].get('p50')} | {rep.get('p50')} / {rep.get('p95')} / "
            f"{rep.get('p99')} | {r['requests_per_s']} | {r['pairs_per_s']} | {r['errors']} "
            f"| {r['peak_rss_mb']:,} |"
        )
    probe = result.get("minilm_query_embed_ms")
    if probe and probe.get("available"):
        lines += ["", f"Fresh queries embed with the hashing embedder here; with the default "
                  f"MiniLM model one fresh query embedding takes p50 {probe['p50']} ms, "
                  f"p95 {probe['p95']} ms on this machine (added to a fresh retrieve)."]
    lines += ["", "Build time splits into generate / embed / SQL / index seconds in the JSON."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ CLI
def bench_service(
    sizes: Annotated[list[int], typer.Option("--sizes", help="store sizes in lessons")] = [  # noqa: B006
        10_000, 100_000],
    index: Annotated[list[str], typer.Option("--index", help="index kinds: memory, chroma")] = [  # noqa: B006
        "memory", "chroma"],
    requests: Annotated[int, typer.Option(help="retrieve+report pairs per case")] = 400,
    concurrency: Annotated[int, typer.Option(help="client threads")] = 4,
    fresh_fraction: Annotated[float, typer.Option(help="share of fresh query texts")] = 0.5,
    database_url: Annotated[
        str | None, typer.Option(help="server mode: PostgreSQL URL (throwaway database)")
    ] = None,
    index_url: Annotated[str | None, typer.Option(help="server mode: Chroma server URL")] = None,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("bench/results"),
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Retrieve/report latency (p50/p95/p99), throughput and memory at scale, over HTTP."""
    run_service_bench(sizes, out, index, requests, concurrency, seed=seed,
                      fresh_fraction=fresh_fraction, database_url=database_url,
                      index_url=index_url)
