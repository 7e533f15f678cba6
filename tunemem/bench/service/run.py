"""`tunemem bench service`: retrieve/report latency and throughput of a real server, driven
from a separate process, against the floor (bare embedding + bare index query) of one run.

For each store size (and the server mode, given its URLs), a child process bulk-loads a
SYNTHETIC store (`service_store`) and times the floor on it: the bare query embedding and the
bare vector-index query that a retrieve makes, with the same fresh texts. Then `tunemem serve`
runs as its own process on that store and `service_driver` processes load it: closed loop at
each concurrency, open loop at fractions of the closed-loop maximum. py-spy samples the server
during one more concurrency-1 run (`service_profile`); the server's peak RSS is read from
/proc. Every run records the machine's load average, since the machine may be shared. Results:
bench/results/<name>.json and <name>.md (`service_report` writes the Markdown).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from tunemem.bench.common.paths import RESULTS_OF
from tunemem.bench.service.server import REPO_ROOT, ServerProcess
from tunemem.bench.service.synthetic_store import SYNTHETIC_NOTE, build_store


# ------------------------------------------------------------------ prepare (child process)
def prepare_case(case: dict[str, Any]) -> dict[str, Any]:
    """Build the store of one case and time its floor; run in a child process (`_child`)."""
    from tunemem.bench.service.floor import time_floor
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    settings = Settings(**case["settings"])
    service = MemoryService(settings)
    try:
        build = build_store(
            service, case["size"], case["seed"], case["value_fraction"], distinct=case["distinct"]
        )
        floor = time_floor(service, case["seed"], case["floor_queries"])
    finally:
        service.close()
    return {"build": build, "floor": floor}


def _child(function: str, argument: dict[str, Any]) -> Any:
    """Run `bench.service.run.<function>(argument)` in a fresh interpreter; its JSON result."""
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-child-") as tmp:
        result_path = Path(tmp) / "result.json"
        code = (
            "import json, sys; import tunemem.bench.service.run as b; "
            f"open(sys.argv[2], 'w').write(json.dumps(b.{function}(json.loads(sys.argv[1]))))"
        )
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(argument), str(result_path)],
            check=True,
            cwd=REPO_ROOT,
        )
        return json.loads(result_path.read_text())


def _drive(url: str, mode: str, concurrency: int, seed: int, spec: dict[str, Any], **kw: Any):
    """One driver process; its result (bench.service.driver)."""
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-drive-") as tmp:
        out = Path(tmp) / "run.json"
        command = [
            sys.executable,
            "-m",
            "tunemem.bench.service.driver",
            "--url",
            url,
            "--mode",
            mode,
        ]
        command += ["--concurrency", str(concurrency), "--seed", str(seed), "--out", str(out)]
        command += ["--duration", str(kw.get("duration", spec["duration"]))]
        command += ["--warmup", str(spec["warmup"])]
        if "rate" in kw:
            command += ["--rate", str(kw["rate"])]
        subprocess.run(
            command, check=True, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        )
        return json.loads(out.read_text())


# ------------------------------------------------------------------ one case
def run_case(case: dict[str, Any], spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Prepare, serve and load one (size, mode) case."""
    from tunemem.bench.service import profile as service_profile

    prepared = _child("prepare_case", case)
    server = ServerProcess(
        case["settings"], case["workers"], workdir / f"server-{case['size']}.log"
    )
    runs: list[dict[str, Any]] = []
    profile: dict[str, Any] = {"available": False, "reason": "not asked for (--profile-seconds 0)"}
    gil_profile = dict(profile)
    try:
        seed = case["seed"] + 1
        for concurrency in spec["concurrency"]:
            print(f"  closed loop, concurrency {concurrency}", file=sys.stderr, flush=True)
            runs.append(_drive(server.url, "closed", concurrency, seed, spec))
            seed += 1
        top = max((r["pairs_per_s"] for r in runs), default=0.0)
        for fraction in spec["open_fractions"]:
            rate = round(max(1.0, fraction * top), 1)
            print(f"  open loop, {rate} pairs/s", file=sys.stderr, flush=True)
            run = _drive(server.url, "open", max(spec["concurrency"]), seed, spec, rate=rate)
            run["rate_fraction_of_closed_max"] = fraction
            runs.append(run)
            seed += 1
        if spec["profile_seconds"] > 0:
            print("  profile (py-spy), concurrency 1", file=sys.stderr, flush=True)
            sampler = service_profile.start(server.process.pid, spec["profile_seconds"])
            _drive(server.url, "closed", 1, seed, spec, duration=spec["profile_seconds"])
            profile = service_profile.finish(sampler)
            busiest = max(spec["concurrency"])
            print(f"  GIL profile (py-spy --gil), concurrency {busiest}", file=sys.stderr)
            sampler = service_profile.start(server.process.pid, spec["profile_seconds"], gil=True)
            _drive(server.url, "closed", busiest, seed, spec, duration=spec["profile_seconds"])
            gil_profile = service_profile.finish(sampler, seconds=spec["profile_seconds"])
            gil_profile["concurrency"] = busiest
        memory = server.memory_mb()
    finally:
        server.stop()
        if case["mode"] == "server":
            _child("drop_case", case)
    return {
        "lessons": case["size"],
        "mode": case["mode"],
        "workers": case["workers"],
        "embedder": case["settings"]["embedder"],
        **prepared,
        "runs": runs,
        "profile": profile,
        "gil_profile": gil_profile,
        "server_memory": memory,
    }


def drop_case(case: dict[str, Any]) -> bool:
    """Remove a server-mode case's tenant from the shared vector index (SQL rows stay)."""
    from tunemem.memory_service.core.vectors.factory import create_index

    settings = case["settings"]
    index = create_index(
        "chroma-http", url=settings["index_url"], collection=settings["index_collection"]
    )
    index.reset(settings["tenant"])
    return True


# ------------------------------------------------------------------ the bench
def run_service_bench(
    sizes: list[int],
    out: Path | None,
    *,
    embedder: str = "minilm",
    distinct: int = 0,
    concurrency: tuple[int, ...] = (1, 8, 32),
    open_fractions: tuple[float, ...] = (0.5, 0.8),
    duration: float = 15.0,
    warmup: float = 3.0,
    profile_seconds: float = 12.0,
    floor_queries: int = 60,
    database_url: str | None = None,
    index_url: str | None = None,
    server_sizes: list[int] | None = None,
    workers: int = 2,
    embedding_cache: Path | None = None,
    embedded: bool = True,
    seed: int = 0,
    value_fraction: float = 0.25,
    name: str = "service",
    command: str | None = None,
) -> dict[str, Any]:
    """Measure the embedded store at each size and, given both server URLs, the server mode.

    Args:
        sizes: embedded store sizes in lessons.
        out: results folder for name.json and name.md; None writes nothing.
        embedder: the service's embedder (minilm: the default; hashing: no model time).
        distinct: lessons embedded per store (0: all); the rest reuse vectors with jitter.
        concurrency: closed-loop concurrencies; the largest is also the open loop's.
        open_fractions: open-loop rates as fractions of the best closed-loop pairs/s.
        duration: measured seconds per run (after `warmup` unmeasured seconds).
        warmup: unmeasured seconds at the start of each run.
        profile_seconds: length of the profiled concurrency-1 run (0: no profile).
        floor_queries: fresh queries timed for the floor.
        database_url: PostgreSQL URL of the server mode (a throwaway database).
        index_url: Chroma server URL of the server mode.
        server_sizes: server-mode sizes (default: `sizes`).
        workers: API worker processes in the server mode.
        embedding_cache: where lesson embeddings are cached across runs (default: a
            temporary file per bench run).
        embedded: measure the embedded store (False: server mode only).
        seed: seed of stores and request streams.
        value_fraction: share of lessons with synthetic LessonValue rows.
        name: file stem of the results.
        command: the command line to record (default: rebuilt from the arguments).

    Returns:
        The result document (also written when `out` is given).
    """
    from tunemem.bench.common.results import memory_held, provenance, started_on, write_result
    from tunemem.bench.service.report import markdown, summary

    started_on()  # the code version is the one this run starts on
    load_at_start = os.getloadavg()[0]  # the machine is shared: its load is part of the result

    spec = dict(
        concurrency=list(concurrency),
        open_fractions=list(open_fractions),
        duration=duration,
        warmup=warmup,
        profile_seconds=profile_seconds,
    )
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-service-") as tmp:
        workdir = Path(tmp)
        cache = str(embedding_cache or workdir / "embedding-cache.sqlite")
        common = dict(embedder=embedder, embedding_cache=cache)
        if embedded:
            for size in sizes:
                settings = dict(common, data_dir=str(workdir / f"store-{size}"), index="chroma")
                cases.append(dict(mode="embedded", size=size, workers=1, settings=settings))
        if database_url and index_url:
            for size in server_sizes or sizes:
                tenant = f"bench-{uuid.uuid4().hex[:8]}"
                settings = dict(
                    common,
                    data_dir=str(workdir / f"server-{size}"),
                    database_url=database_url,
                    index="chroma-http",
                    index_url=index_url,
                    index_collection="tunemem_bench",
                    tenant=tenant,
                )
                cases.append(dict(mode="server", size=size, workers=workers, settings=settings))
        results = []
        for position, case in enumerate(cases, 1):
            case.update(
                seed=seed,
                value_fraction=value_fraction,
                distinct=distinct,
                floor_queries=floor_queries,
            )
            print(
                f"service bench case {position}/{len(cases)}: {case['mode']}, "
                f"{case['size']:,} lessons",
                file=sys.stderr,
                flush=True,
            )
            results.append(run_case(case, spec, workdir))
    result: dict[str, Any] = {
        "benchmark": "service",
        "synthetic": SYNTHETIC_NOTE,
        "memory_held": memory_held("none", "a store of synthetic lessons of the sizes above"),
        **provenance(
            command or _command_line(sizes, embedder, distinct, concurrency, duration, name),
            seeds=[seed],
            kind="measured",
        ),
        "settings": {
            **spec,
            "embedder": embedder,
            "distinct": distinct,
            "seed": seed,
            "value_fraction": value_fraction,
            "floor_queries": floor_queries,
            "driver": "tunemem.bench.service.driver: asyncio HTTP/1.1 keep-alive client, own "
            "process",
            "server": "python -m tunemem serve (uvicorn, uvloop, httptools)",
        },
        "server_mode": "measured"
        if database_url and index_url
        else "not measured: no --database-url/--index-url given (PostgreSQL + Chroma server)",
        "cases": results,
        "load_average_1min": {"start": load_at_start, "end": os.getloadavg()[0]},
    }
    result["summary"] = summary(result)
    if out is not None:
        write_result(out, name, result, markdown(result))
    return result


def _command_line(sizes, embedder, distinct, concurrency, duration, name) -> str:  # type: ignore[no-untyped-def]
    parts = ["tunemem bench service", *(f"--sizes {s}" for s in sizes), f"--embedder {embedder}"]
    parts += [f"--distinct {distinct}"] if distinct else []
    parts += [f"--concurrency {c}" for c in concurrency] + [f"--duration {duration}"]
    parts += [f"--name {name}"] if name != "service" else []
    return " ".join(parts)


# ------------------------------------------------------------------ CLI
def bench_service(
    sizes: Annotated[list[int], typer.Option("--sizes", help="embedded store sizes")] = [  # noqa: B006
        10_000,
        100_000,
    ],
    embedder: Annotated[str, typer.Option(help="minilm (default) or hashing")] = "minilm",
    distinct: Annotated[
        int, typer.Option(help="lessons embedded per store (0: all); the rest reuse vectors")
    ] = 0,
    concurrency: Annotated[
        list[int], typer.Option("--concurrency", help="closed-loop concurrencies")
    ] = [1, 8, 32],  # noqa: B006
    open_fraction: Annotated[
        list[float],
        typer.Option("--open-fraction", help="open-loop rates, as fractions of the closed max"),
    ] = [0.5, 0.8],  # noqa: B006
    duration: Annotated[float, typer.Option(help="measured seconds per run")] = 15.0,
    warmup: Annotated[float, typer.Option(help="unmeasured seconds before each run")] = 3.0,
    profile_seconds: Annotated[
        float, typer.Option(help="py-spy profile of one concurrency-1 run (0: none)")
    ] = 12.0,
    database_url: Annotated[
        str | None, typer.Option(help="server mode: PostgreSQL URL (throwaway database)")
    ] = None,
    index_url: Annotated[str | None, typer.Option(help="server mode: Chroma server URL")] = None,
    server_sizes: Annotated[
        list[int] | None, typer.Option("--server-sizes", help="server-mode sizes")
    ] = None,
    workers: Annotated[int, typer.Option(help="server mode: API worker processes")] = 2,
    embedded: Annotated[
        bool, typer.Option("--embedded/--no-embedded", help="measure the embedded store")
    ] = True,
    embedding_cache: Annotated[
        Path | None, typer.Option(help="lesson-embedding cache kept across bench runs")
    ] = None,
    out: Annotated[Path, typer.Option(help="results folder")] = RESULTS_OF["service"],
    name: Annotated[str, typer.Option(help="results file stem")] = "service",
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Retrieve/report latency (p50/p95/p99), throughput and memory of a served store,
    driven from separate processes, beside the floor (bare embedding + index query)."""
    run_service_bench(
        sizes,
        out,
        embedder=embedder,
        distinct=distinct,
        concurrency=tuple(concurrency),
        open_fractions=tuple(open_fraction),
        duration=duration,
        warmup=warmup,
        profile_seconds=profile_seconds,
        database_url=database_url,
        index_url=index_url,
        server_sizes=server_sizes,
        workers=workers,
        embedding_cache=embedding_cache,
        embedded=embedded,
        seed=seed,
        name=name,
        command="tunemem bench service " + " ".join(sys.argv[3:])
        if sys.argv[1:3] == ["bench", "service"]
        else None,
    )
