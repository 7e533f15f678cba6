"""`tunemem capture -- python script.py`: a plain `@triton.autotune` kernel, its program
unchanged, run in a real subprocess under the Triton interpreter on the CPU, fills a live
memory with its autotunes; the interpreter's timings are kept, marked, and not as a chip's
latency. The same memory then serves the `triton.autotune` drop-in's next key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tunemem.bench.common.memory_server import LiveService

TUNEMEM = Path(sys.executable).parent / "tunemem"

PROGRAM = '''
import sys
import time

import torch
import triton
import triton.language as tl


def wall_clock(kernel_call, quantiles=None):
    """Triton's interpreter has no benchmarker of its own on the CPU."""
    kernel_call()
    started = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - started) * 1e3
    return [ms, ms, ms]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512) for w in (2, 4)],
    key=["n"],
    do_bench=wall_clock,
)
@triton.jit
def negate_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, -tl.load(x_ptr + offsets, mask=mask), mask=mask)


for n in (1000, 3000, 1000):
    x = torch.randn(n)
    y = torch.empty_like(x)
    negate_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.equal(y, -x)
print("argv", sys.argv[1:])
'''


@pytest.fixture
def memory():
    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    yield live
    live.close()


def stored_runs(live: LiveService, tmp_path: Path) -> list[dict]:
    """The memory's trajectories with their attempts, as its export bundle holds them."""
    bundle = tmp_path / "bundle.jsonl"
    live.service.export(bundle)
    rows = [json.loads(line) for line in bundle.read_text().splitlines()]
    runs = {
        r["data"]["id"]: {**r["data"], "attempts": []} for r in rows if r["kind"] == "trajectory"
    }
    for row in rows:
        if row["kind"] == "attempt":
            runs[row["data"]["trajectory_id"]]["attempts"].append(row["data"])
    return list(runs.values())


def run_captured(url: str, script: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop("TUNEMEM_URL", None)
    command = [str(TUNEMEM), "capture", "--url", url, "--", sys.executable, str(script), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_a_plain_autotune_program_fills_the_memory_with_its_timings(memory, tmp_path):
    script = tmp_path / "my_script.py"
    script.write_text(PROGRAM)
    done = run_captured(memory.url, script, "--flag", "x")
    assert done.returncode == 0, done.stderr
    assert "argv ['--flag', 'x']" in done.stdout  # the program's own argv
    assert "tunemem" not in done.stderr  # no warning: the memory was there

    from tunemem.agent_client.client import MemoryClient

    with MemoryClient(memory.url) as client:
        assert client.health()["counts"]["trajectories"] == 2  # keys 1000 and 3000, once each
    by_n = {run["task"]["signature"]["n"]: run for run in stored_runs(memory, tmp_path)}
    assert set(by_n) == {1000, 3000}
    run = by_n[1000]
    assert run["task"]["kernel"] == "negate_kernel" and run["task"]["dtype"] == "float32"
    assert run["context"]["chip_raw"].endswith("(Triton interpreter)")
    assert run["evidence"]["interpreter"] is True
    assert len(run["attempts"]) == 6
    for attempt in run["attempts"]:  # the interpreter's wall clock, never a chip's latency
        assert attempt["latency_ms"] is None
        assert attempt["metrics"]["interpreter_wall_ms"] > 0


def test_a_memory_away_leaves_the_program_as_it_was(tmp_path):
    script = tmp_path / "my_script.py"
    script.write_text(PROGRAM)
    done = run_captured("http://127.0.0.1:9", script)
    assert done.returncode == 0 and "argv []" in done.stdout
    assert done.stderr.count("CaptureUnavailableWarning") == 1


def test_bad_invocations_say_what_is_wrong(tmp_path):
    for args, message in (
        (["capture", "--url", "http://127.0.0.1:9"], "give the program"),
        (["capture", "--url", "memory:9", "--", "python"], "must be an http"),
        (["capture", "--url", "http://127.0.0.1:9", "--", "no-such-program-x"], "not a program"),
    ):
        done = subprocess.run([str(TUNEMEM), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_a_program_that_never_imports_triton_loads_nothing_more(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(
        "import sys\nnames = ('tunemem.capture', 'triton', 'tunemem.agent_client', 'httpx')\n"
        "print([m for m in names if m in sys.modules])\n"
    )
    done = run_captured("http://127.0.0.1:9", script)
    # The capture is there, waiting for Triton; nothing else of it is loaded.
    assert done.stdout.strip() == "['tunemem.capture']", done.stdout + done.stderr


def test_the_programs_own_sitecustomize_still_loads(tmp_path):
    own = tmp_path / "own_site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITE = True\n")
    script = tmp_path / "plain.py"
    script.write_text("import builtins, sys\nprint(getattr(builtins, 'OWN_SITE', False))\n")
    env = {**os.environ, "PYTHONPATH": str(own)}
    command = [str(TUNEMEM), "capture", "--url", "http://127.0.0.1:9", "--"]
    done = subprocess.run(
        [*command, sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stdout + done.stderr


def test_a_forked_worker_captures_into_the_memory_too(memory):
    """A pool worker forked after the capture started (its upload thread is not inherited)."""
    import torch
    import triton
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction, KernelInterface

    from tunemem.agent_client.client import MemoryClient
    from tunemem.agent_client.tuners.triton.capture import TritonCapture

    def scale(x_ptr, n, BLOCK: triton.language.constexpr):
        pass

    class NoLaunch(KernelInterface):
        def __init__(self):
            self.fn = JITFunction(scale)
            self.arg_names = self.fn.arg_names

        def run(self, *args, **kwargs):
            return None

    def tune(n: int) -> None:
        launch = NoLaunch()
        configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (32, 64)]
        bench = lambda call, quantiles: [1.0]  # noqa: E731
        kernel = Autotuner(launch, launch.arg_names, configs, ["n"], None, None, do_bench=bench)
        kernel.run(torch.zeros(4), n)

    saved = os.environ.pop("TRITON_INTERPRET", None)
    capture = TritonCapture(memory.url).install()
    try:
        tune(1)  # the parent's upload thread runs
        assert capture.flush(30.0)
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                tune(2)
                code = 0 if capture.flush(30.0) and capture.sent == 1 else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        capture.uninstall()
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    with MemoryClient(memory.url) as client:
        assert client.health()["counts"]["trajectories"] == 2
