"""What `tunemem capture` costs the program: time on the program's thread per autotune.

`python -m tunemem.bench.studies.capture_overhead [--keys 40] [--configs 6 96] [--reps 3]
[--bench-ms 0 1] [--out bench/results/capture]` runs Triton's own `Autotuner` (the compiled
path, not the interpreter) on the CPU over a real `JITFunction` that is never launched:
`do_bench` answers with a fixed timing at once (what is left of each autotune is Triton's own
bookkeeping and, when on, the listener: the capture's worst case) or after a sleep of
`--bench-ms` per configuration, standing for a GPU's benchmarking, during which the program's
thread waits with the interpreter lock released (Triton's `do_bench` defaults to 25 ms of
warm-up and 100 ms of repetitions per configuration). Three arms, interleaved in each
repetition, each over `--keys` new keys:
no capture; the capture with the memory up (a live service on this machine, every upload
checked as sent; the service runs in its own process, `tunemem serve` with an in-memory index
and the hashing embedder, as a memory elsewhere would); the capture with the memory away (a
closed port). Also the listener call alone (the uploads going to a client that keeps nothing),
and the cost of importing the capture into a process that imports Triton (the capture's start,
paid once per process by `tunemem capture`). Medians over the repetitions.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction, KernelInterface

from tunemem.bench.common.paths import RESULTS_OF
from tunemem.bench.common.results import memory_held, provenance, started_on, write_result


def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


class NoLaunch(KernelInterface):
    """The kernel as Triton's Autotuner wraps it; launching does nothing."""

    def __init__(self) -> None:
        self.fn = JITFunction(scale)
        self.arg_names = self.fn.arg_names

    def run(self, *args: Any, **kwargs: Any) -> None:
        return None


def autotuner(configs: int, bench_ms: float) -> Autotuner:
    launch = NoLaunch()
    space = [triton.Config({"BLOCK": 32 * (i + 1)}, num_warps=4) for i in range(configs)]

    def do_bench(kernel_call: Any, quantiles: Any = None) -> list[float]:
        if bench_ms:  # the GPU's benchmarking: the program's thread waits, the GIL released
            time.sleep(bench_ms / 1e3)
        return [1.0, 1.0, 1.0]

    return Autotuner(launch, launch.arg_names, space, ["n"], None, None, do_bench=do_bench)


def per_autotune_us(configs: int, keys: int, start: int, bench_ms: float) -> float:
    """Wall time of one new key's autotune (Triton's run, listener included), in us."""
    kernel = autotuner(configs, bench_ms)
    started = time.perf_counter()
    for n in range(start, start + keys):
        kernel.run(None, None, n)
    return (time.perf_counter() - started) / keys * 1e6


def listener_us(capture: Any, configs: int, calls: int) -> float:
    kernel = NoLaunch()
    space = {triton.Config({"BLOCK": 32 * (i + 1)}, num_warps=4): [1.0] for i in range(configs)}
    best = next(iter(space))
    started = time.perf_counter()
    for n in range(calls):
        capture(fn=kernel.fn, key=(n,), best_config=best, configs_timings=space, cache_hit=False)
    return (time.perf_counter() - started) / calls * 1e6


def import_ms(code: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


class Discard:
    """A client that keeps nothing: the listener's own cost, without the network."""

    def upload_trajectories(self, runs: Any) -> dict[str, int]:
        return {"stored": 0}


class ServedMemory:
    """`tunemem serve` in its own process, on a free port, over a scratch data directory."""

    def __init__(self) -> None:
        import os
        import tempfile

        import httpx

        self._dir = tempfile.TemporaryDirectory(prefix="tunemem-capture-bench-")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "TUNEMEM_DATA_DIR": self._dir.name,
            "TUNEMEM_INDEX": "memory",
            "TUNEMEM_EMBEDDER": "hashing",
        }
        env.pop("TUNEMEM_API_KEY", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tunemem.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("tunemem serve did not start")
            time.sleep(0.5)

    def trajectories(self) -> int:
        import httpx

        return int(httpx.get(f"{self.url}/healthz", timeout=30).json()["counts"]["trajectories"])

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._dir.cleanup()


def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def run(keys: int, configs: list[int], reps: int, bench_ms: list[float]) -> dict[str, Any]:
    from triton import knobs

    from tunemem.agent_client.tuners.triton.capture import TritonCapture

    live = ServedMemory()
    away = closed_url()
    rows = []
    try:
        for size, wait in [(c, b) for b in bench_ms for c in configs]:
            arms: dict[str, list[float]] = {"off": [], "memory up": [], "memory away": []}
            alone: dict[str, list[float]] = {"queued": []}
            sent = queued = 0
            for rep in range(reps):
                start = (rep + 1) * 1_000_000
                arms["off"].append(per_autotune_us(size, keys, start, wait))
                for arm, url in (("memory up", live.url), ("memory away", away)):
                    capture = TritonCapture(url, timeout_s=5.0, max_pending=100_000).install()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        arms[arm].append(per_autotune_us(size, keys, start, wait))
                        capture.uninstall()
                        assert knobs.autotuning.listener is None
                        capture.flush(300.0)
                    if arm == "memory up":
                        sent += capture.sent
                        queued += capture.captured
                quiet = TritonCapture("http://discard", client=Discard(), max_pending=100_000)
                alone["queued"].append(listener_us(quiet, size, keys))
                quiet.flush(60.0)
            off = statistics.median(arms["off"])
            rows.append(
                {
                    "configs": size,
                    "bench_ms_per_config": wait,
                    "per_autotune_us": {a: round(statistics.median(v), 1) for a, v in arms.items()},
                    "overhead_us": {
                        a: round(statistics.median(v) - off, 1)
                        for a, v in arms.items()
                        if a != "off"
                    },
                    "listener_call_us": {
                        a: round(statistics.median(v), 1) for a, v in alone.items()
                    },
                    "uploads_queued_memory_up": queued,
                    "uploads_sent_memory_up": sent,
                    "trajectories_the_memory_held_after": live.trajectories(),
                }
            )
    finally:
        live.close()
    base = "import triton"
    with_capture = "import triton; import tunemem.agent_client.tuners.triton.capture"
    start_ms = {
        "import triton": round(import_ms(base, reps), 1),
        "import triton + the capture": round(import_ms(with_capture, reps), 1),
    }
    return {"rows": rows, "process_start_ms": start_ms}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# What `tunemem capture` costs per autotune",
        "",
        f"`{result['command']}` on {result['machine']['cpu']} ({result['machine']['cores']} "
        f"cores), code {result['code_version']}, Triton {result['triton']}; "
        f"{result['keys']} new keys per arm and repetition, {result['reps']} repetitions "
        "interleaved, medians. Measured, not "
        "replayed: Triton's own Autotuner on the CPU, its do_bench answering at once (Triton's "
        "bookkeeping only: the worst case for the capture, whose upload thread then competes "
        "with the program for the interpreter lock) or after a sleep standing for a GPU's "
        "benchmarking, during which the program's thread waits with the lock released "
        "(Triton's do_bench defaults to 25 ms of warm-up and 100 ms of repetitions per "
        "configuration).",
        "",
        "| configurations | benchmark per configuration (ms) | no capture (us) | memory up (us) "
        "| memory away (us) | overhead up / away (us) | listener call alone (us) "
        "| uploads sent |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        t, o, c = row["per_autotune_us"], row["overhead_us"], row["listener_call_us"]
        lines.append(
            f"| {row['configs']} | {row['bench_ms_per_config']} | {t['off']} "
            f"| {t['memory up']} | {t['memory away']} | "
            f"{o['memory up']} / {o['memory away']} | {c['queued']} | "
            f"{row['uploads_sent_memory_up']} of {row['uploads_queued_memory_up']} |"
        )
    start = result["process_start_ms"]
    lines += [
        "",
        f"Process start (a new Python importing Triton, median of {result['reps']}): "
        f"{start['import triton']} ms without the capture, "
        f"{start['import triton + the capture']} ms with it (`tunemem capture` pays this once "
        "per Python process, when the program imports Triton).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--configs", type=int, nargs="+", default=[6, 96])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--bench-ms",
        type=float,
        nargs="+",
        default=[0.0, 1.0],
        help="each configuration's benchmark, a sleep (0: instant, Triton's bookkeeping only)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_OF["capture"])
    args = parser.parse_args(argv)
    started_on()  # the code version is the one this run starts on
    result: dict[str, Any] = {
        **provenance(
            "python -m tunemem.bench.studies.capture_overhead "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            seeds=[0],  # nothing is drawn at random
            kind="measured",
        ),
        "triton": triton.__version__,
        "keys": args.keys,
        "reps": args.reps,
        "timing": "CPU; Triton's Autotuner, do_bench a sleep or instant",
        "memory_held": memory_held(
            "none",
            "the memory-up arm's service starts empty and receives each captured autotune "
            "(SYNTHETIC: every timing 1.0 ms)",
        ),
        "bench_ms": args.bench_ms,
        **run(args.keys, args.configs, args.reps, args.bench_ms),
    }
    write_result(args.out, "overhead", result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
