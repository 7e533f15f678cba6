"""Out-of-process load driver of `tunemem bench service`: retrieve+report pairs over HTTP/1.1.

Started as its own process (`python -m tunemem.bench.service.driver --url ...`), so the latency it
reports is not shared with the server's interpreter lock. It speaks HTTP/1.1 with keep-alive
over asyncio streams itself (a few dozen microseconds of client CPU per request, against about
a millisecond for a general-purpose client), sends a query text no earlier request had (so the
server embeds every query), and reports each retrieved lesson set back as an outcome.

Closed loop: `concurrency` connections, each sending its next pair when the last one answered.
Open loop: pairs start on a Poisson schedule at `rate` per second on up to `concurrency`
connections; a pair's latency counts from its scheduled start, so time spent waiting for a free
connection is included (no coordinated omission).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from tunemem.bench.service.synthetic_store import CHIPS, DTYPES, OPS, STAGES

VERBS = ("tune", "speed up", "fix", "first draft of", "lower latency of", "vectorise")


def fresh_query(rng: random.Random, serial: int, tag: str) -> dict[str, Any]:
    """A retrieve body whose query text no other request of any run has (tag + serial)."""
    op, chip, dtype = rng.choice(OPS), rng.choice(CHIPS), rng.choice(DTYPES)
    n = 2 ** rng.randint(8, 16)
    text = (
        f"{rng.choice(VERBS)} {op} for {dtype} rows of {n} elements on {chip}; "
        f"attempt {serial} ({tag}) after BLOCK_SIZE={2 ** rng.randint(5, 12)} "
        f"num_warps={2 ** rng.randint(0, 4)}"
    )
    return {
        "query": text,
        "task": {"op": op, "dtype": dtype},
        "context": {"chip": chip},
        "stage": rng.choice(STAGES),
        "k": 3,
    }


def synthetic_outcome(rng: random.Random) -> dict[str, Any]:
    latency = rng.uniform(0.05, 2.0)
    return {
        "compiled": rng.random() < 0.9,
        "correct": rng.random() < 0.8,
        "latency_ms": latency,
        "best_before_ms": latency * rng.uniform(0.8, 1.3),
    }


class Connection:
    """One keep-alive HTTP/1.1 connection; requests on it are sequential."""

    def __init__(self, host: str, port: int, headers: dict[str, str]):
        self.host, self.port = host, port
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head = f"Host: {host}:{port}\r\nContent-Type: application/json\r\n{extra}"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        reused = self._writer is not None
        try:
            return await self._send(path, body)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close()
            if not reused:
                raise
        # The server closes a keep-alive connection idle past its timeout (uvicorn: 5 s), as
        # open-loop connections at low rates are; it closed before reading, so send again.
        return await self._send(path, body)

    async def _send(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self._writer is None:
            await self._open()
        assert self._reader is not None and self._writer is not None
        self._writer.write(
            f"POST {path} HTTP/1.1\r\n{self._head}Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        try:
            return await self._read_response()
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close()
            raise

    async def _read_response(self) -> tuple[int, bytes]:
        assert self._reader is not None
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).strip(), 16)
                if size == 0:
                    await self._reader.readuntil(b"\r\n")
                    break
                chunks.append(await self._reader.readexactly(size + 2))
            body = b"".join(c[:-2] for c in chunks)
        else:
            body = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


@dataclass
class Samples:
    retrieve: list[float] = field(default_factory=list)
    report: list[float] = field(default_factory=list)
    pair: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    pairs: int = 0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


class Driver:
    """Sends pairs; records latencies of those started after the warm-up."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        url = urlparse(args.url)
        headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
        self._connect = lambda: Connection(url.hostname or "127.0.0.1", url.port or 80, headers)
        self.rng = random.Random(args.seed)
        self.tag = f"{args.seed}-{os.getpid()}-{time.time_ns()}"
        self.serial = 0
        self.samples = Samples()
        self.measure_from = 0.0

    async def pair(self, conn: Connection, started: float) -> None:
        """One retrieve, then (unless retrieve-only) the report of its outcome."""
        self.serial += 1
        body = json.dumps(fresh_query(self.rng, self.serial, self.tag)).encode()
        outcome = synthetic_outcome(self.rng)
        measured = started >= self.measure_from
        try:
            status, data = await conn.post("/v1/retrieve", body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.samples.error(f"retrieve {type(exc).__name__}")
            return
        t1 = time.perf_counter()
        if status != 200:
            if measured:
                self.samples.error(f"retrieve {status}")
            return
        if measured:
            self.samples.retrieve.append(1000 * (t1 - started))
        if self.args.retrieve_only:
            if measured:
                self.samples.pairs += 1
            return
        answer = json.loads(data)
        report = {
            "retrieval_id": answer["retrieval_id"],
            "outcome": outcome,
            "used": [lesson["id"] for lesson in answer["lessons"]],
        }
        try:
            status, _ = await conn.post("/v1/outcomes", json.dumps(report).encode())
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.samples.error(f"report {type(exc).__name__}")
            return
        t2 = time.perf_counter()
        if not measured:
            return
        if status != 200:
            self.samples.error(f"report {status}")
            return
        self.samples.report.append(1000 * (t2 - t1))
        self.samples.pair.append(1000 * (t2 - started))
        self.samples.pairs += 1

    async def closed_loop(self, deadline: float) -> None:
        async def worker() -> None:
            conn = self._connect()
            try:
                while time.perf_counter() < deadline:
                    await self.pair(conn, time.perf_counter())
            finally:
                conn.close()

        await asyncio.gather(*(worker() for _ in range(self.args.concurrency)))

    async def open_loop(self, deadline: float) -> None:
        pool: asyncio.Queue[Connection] = asyncio.Queue()
        for _ in range(self.args.concurrency):
            pool.put_nowait(self._connect())
        tasks: set[asyncio.Task[None]] = set()

        async def scheduled(start: float) -> None:
            conn = await pool.get()
            try:
                await self.pair(conn, start)
            finally:
                pool.put_nowait(conn)

        arrivals = random.Random(self.args.seed + 7)
        next_start = time.perf_counter()
        while next_start < deadline:
            delay = next_start - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(scheduled(next_start))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_start += arrivals.expovariate(self.args.rate)
        if tasks:
            await asyncio.gather(*tasks)
        while not pool.empty():
            pool.get_nowait().close()

    async def run(self) -> float:
        start = time.perf_counter()
        self.measure_from = start + self.args.warmup
        deadline = self.measure_from + self.args.duration
        if self.args.mode == "closed":
            await self.closed_loop(deadline)
        else:
            await self.open_loop(deadline)
        return time.perf_counter() - self.measure_from


def percentiles(ms: list[float]) -> dict[str, float]:
    """p50/p95/p99/max and mean in milliseconds (inclusive quantiles)."""
    if not ms:
        return {"n": 0}
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return {
        "n": len(ms),
        "p50": round(cuts[49], 2),
        "p95": round(cuts[94], 2),
        "p99": round(cuts[98], 2),
        "max": round(max(ms), 2),
        "mean": round(statistics.fmean(ms), 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", required=True, help="the tunemem server, e.g. http://127.0.0.1:8300"
    )
    parser.add_argument("--mode", choices=("closed", "open"), default="closed")
    parser.add_argument("--concurrency", type=int, default=1, help="connections")
    parser.add_argument("--rate", type=float, default=50.0, help="open loop: pairs per second")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--retrieve-only", action="store_true", help="no report after retrieve")
    parser.add_argument("--out", default=None, help="write the JSON result here")
    args = parser.parse_args(argv)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    driver = Driver(args)
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    wall = asyncio.run(driver.run())
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    s = driver.samples
    result = {
        "mode": args.mode,
        "concurrency": args.concurrency,
        "rate": args.rate if args.mode == "open" else None,
        "retrieve_only": args.retrieve_only,
        "measured_s": round(wall, 2),
        "pairs": s.pairs,
        "pairs_per_s": round(s.pairs / wall, 1) if wall > 0 else 0.0,
        "retrieve_ms": percentiles(s.retrieve),
        "report_ms": percentiles(s.report),
        "pair_ms": percentiles(s.pair),
        "errors": s.errors,
        "driver_cpu_s": round(
            cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 2
        ),
        "load_average_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
