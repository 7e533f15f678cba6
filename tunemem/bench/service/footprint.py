"""`python -m tunemem.bench.service.footprint`: where a served store's memory goes.

Serves an embedded store (`tunemem serve`, its own process; built first with `service_store`
when the folder is empty), loads it with `service_driver` at concurrency 1, 8 and 32 (fresh
query texts, retrieve + report pairs), and reads the server's /proc after start and after each
load: peak and current RSS, anonymous against file-backed pages, and the mappings holding the
most. Writes <out>/<name>.json and <name>.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tunemem.bench.common.paths import RESULTS_OF
from tunemem.bench.common.results import memory_held, provenance, write_result
from tunemem.bench.service.server import REPO_ROOT, ServerProcess

FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "Threads")


def snapshot(pid: int, top: int = 8) -> dict[str, Any]:
    """The process's status figures (MB; threads) and its `top` mappings by resident size."""
    status: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":")[0]
        if name in FIELDS:
            value = int(line.split()[1])
            status[name] = value if name == "Threads" else round(value / 1024, 1)
    mappings: dict[str, int] = {}
    current = "[anon]"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split()
            current = parts[5] if len(parts) > 5 else "[anon]"
        elif line.startswith("Rss:"):
            mappings[current] = mappings.get(current, 0) + int(line.split()[1])
    largest = sorted(mappings.items(), key=lambda kv: -kv[1])[:top]
    return {**status, "mappings_mb": {k: round(v / 1024, 1) for k, v in largest}}


def _build(store: Path, size: int, distinct: int, cache: str | None) -> dict[str, Any]:
    from tunemem.bench.service.synthetic_store import build_store
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    settings = Settings(
        data_dir=store, index="chroma", embedder="minilm", embedding_cache=cache or "auto"
    )
    service = MemoryService(settings)
    try:
        return build_store(service, size, 7, 0.3, distinct=distinct)
    finally:
        service.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    store = Path(args.store)
    build = None
    if not (store / "tunemem.db").exists():
        build = _build(store, args.size, args.distinct, args.embedding_cache)
    settings = {"data_dir": str(store), "index": "chroma", "embedder": "minilm"}
    stages: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tunemem-bench-memory-") as tmp:
        server = ServerProcess(settings, 1, Path(tmp) / "server.log")
        try:
            stages.append({"after": "start", **snapshot(server.process.pid)})
            for concurrency in args.concurrency:
                out = Path(tmp) / f"c{concurrency}.json"
                command = [
                    sys.executable,
                    "-m",
                    "tunemem.bench.service.driver",
                    "--url",
                    server.url,
                ]
                command += ["--mode", "closed", "--concurrency", str(concurrency)]
                command += ["--seed", str(concurrency), "--out", str(out)]
                command += ["--duration", str(args.duration), "--warmup", "2"]
                env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
                subprocess.run(command, check=True, cwd=REPO_ROOT, env=env)
                driven = json.loads(out.read_text())
                stages.append(
                    {
                        "after": f"closed loop c={concurrency}",
                        "retrieve_ms": driven["retrieve_ms"],
                        "pairs_per_s": driven["pairs_per_s"],
                        **snapshot(server.process.pid),
                    }
                )
        finally:
            server.stop()
    return {
        "benchmark": "service-memory",
        "memory_held": memory_held("none", "a store of synthetic lessons"),
        **provenance(
            "python -m tunemem.bench.service.footprint " + " ".join(sys.argv[1:]),
            seeds=[0],  # the synthetic store's seed
            kind="measured",
        ),
        "lessons": args.size,
        "build": build,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "stages": stages,
    }


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    md = (
        f"# Server memory at {result['lessons']:,} lessons (embedded)\n\n"
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; load average (1 min) "
        f"at the end {result['load_average_1min']}. Command: `{result['command']}`\n\n"
        "SYNTHETIC lessons (tunemem/bench/service/synthetic_store.py). The server is "
        "`tunemem serve` in its own process; after each closed-loop load (fresh query texts, "
        "retrieve + report "
        "pairs) its /proc is read. RSS counts a file page once per mapping of it.\n\n"
        "| after | peak RSS MB | RSS MB | anonymous MB | file-backed MB | threads "
        "| retrieve p50 / p99 ms | pairs/s |\n|---|---|---|---|---|---|---|---|\n"
    )
    for s in result["stages"]:
        latency = (
            f"{s['retrieve_ms']['p50']} / {s['retrieve_ms']['p99']}" if "retrieve_ms" in s else ""
        )
        md += (
            f"| {s['after']} | {s['VmHWM']:,} | {s['VmRSS']:,} | {s['RssAnon']:,} "
            f"| {s['RssFile']:,} | {s['Threads']} | {latency} | {s.get('pairs_per_s', '')} |\n"
        )
    last = result["stages"][-1]
    md += f"\nLargest mappings at the end ({last['after']}):\n\n"
    md += "| mapping | RSS MB |\n|---|---|\n"
    for name, mb in last["mappings_mb"].items():
        md += f"| `{name}` | {mb} |\n"
    return md


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="store folder (built when empty)")
    parser.add_argument("--size", type=int, default=100_000, help="lessons, when building")
    parser.add_argument("--distinct", type=int, default=20_000, help="embedded lessons")
    parser.add_argument("--embedding-cache", default=None, help="lesson embedding cache file")
    parser.add_argument("--concurrency", type=int, action="append", default=None)
    parser.add_argument("--duration", type=float, default=8.0, help="measured s per load")
    parser.add_argument("--name", default="memory")
    parser.add_argument("--out", default=str(RESULTS_OF["service"]))
    args = parser.parse_args(argv)
    args.concurrency = args.concurrency or [1, 8, 32]
    result = run(args)
    write_result(Path(args.out), args.name, result, markdown(result))
    return result


if __name__ == "__main__":
    main()
