"""Load side of `tunemem bench service`: a uvicorn server thread, httpx client threads.

Each planned item is POST /v1/retrieve then POST /v1/outcomes reporting a synthetic outcome
for the returned lessons. Queries come from a hot set (sent once before measuring, so their
embeddings are cached) or are fresh (a text no other request has, embedded on the request).
"""

from __future__ import annotations

import random
import resource
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.service_store import CHIPS, DTYPES, OPS, STAGES


def hot_queries(seed: int, hot: int = 32) -> list[dict[str, Any]]:
    """The repeated queries; the bench sends each once before measuring, so they are cached."""
    rng = random.Random(seed)
    return [query_body(rng, None) for _ in range(hot)]


def request_plan(count: int, fresh_fraction: float, seed: int) -> list[dict[str, Any]]:
    """Retrieve bodies: queries from the hot set (cached embeddings) and fresh ones."""
    rng = random.Random(seed + 1)
    hot_set = hot_queries(seed)
    return [
        {"body": query_body(rng, i), "cached": False}
        if rng.random() < fresh_fraction
        else {"body": rng.choice(hot_set), "cached": True}
        for i in range(count)
    ]


def query_body(rng: random.Random, unique: int | None) -> dict[str, Any]:
    op, chip, dtype = rng.choice(OPS), rng.choice(CHIPS), rng.choice(DTYPES)
    text = f"tune {op} for {dtype} rows of {2 ** rng.randint(8, 16)} elements"
    if unique is not None:  # a text no other request has, so its embedding is never cached
        text += f"; attempt {unique} after BLOCK_SIZE={2 ** rng.randint(5, 12)}"
    return {
        "query": text,
        "task": {"op": op, "dtype": dtype},
        "context": {"chip": chip},
        "stage": rng.choice(STAGES),
        "k": 3,
    }


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
                got = [
                    {
                        "endpoint": "retrieve",
                        "ms": 1000 * (time.perf_counter() - t0),
                        "ok": r.status_code == 200,
                        "cached": item["cached"],
                    }
                ]
                if r.status_code == 200:
                    data = r.json()
                    latency = rng.uniform(0.05, 2.0)
                    outcome = {
                        "compiled": rng.random() < 0.9,
                        "correct": rng.random() < 0.8,
                        "latency_ms": latency,
                        "best_before_ms": latency * rng.uniform(0.8, 1.3),
                    }
                    t1 = time.perf_counter()
                    r2 = client.post(
                        "/v1/outcomes",
                        json={
                            "retrieval_id": data["retrieval_id"],
                            "outcome": outcome,
                            "used": [lesson["id"] for lesson in data["lessons"]],
                        },
                    )
                    got.append(
                        {
                            "endpoint": "report",
                            "ms": 1000 * (time.perf_counter() - t1),
                            "ok": r2.status_code == 200,
                            "cached": item["cached"],
                        }
                    )
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
    return {
        "n": len(ms),
        "p50": round(cuts[49], 2),
        "p95": round(cuts[94], 2),
        "p99": round(cuts[98], 2),
        "mean": round(statistics.fmean(ms), 2),
    }


def rss_mb() -> tuple[float, float]:
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

        from memory_service.http.app import create_app

        config = uvicorn.Config(
            create_app(service), host="127.0.0.1", port=0, log_level="warning", access_log=False
        )
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
