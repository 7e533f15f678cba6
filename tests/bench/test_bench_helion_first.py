"""The memory-first bench without a GPU: `seeds_gpu.py` run end to end on the CPU against a
scripted stand-in of Helion (synthetic landscapes: one flat optimum, one lone peak), then
`report.py` over what it wrote; and the CPU replay of memory first over the committed H100
logs (`replay_first.py`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import runpy
import sys
import tarfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tunemem.bench.helion import replay_first
from tunemem.bench.helion.report import analyse, markdown

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results" / "helion"
RUNS = [RESULTS / "h100-run1-softmax", RESULTS / "h100-run2-rmsnorm", RESULTS / "h100-run3-matmul"]
SCRIPT = REPO / "tunemem" / "bench" / "helion" / "seeds_gpu.py"

BLOCKS = [1, 2, 4, 8, 16, 32, 64]


def landscape(kernel: str, shape: tuple[int, ...], config: dict[str, Any]) -> float:
    """Synthetic ms: the best block is the shape's first size / 32; 'flat' barely minds a
    miss (2 % a doubling), 'peaky' doubles its time per doubling (a lone optimum)."""
    best = max(1, shape[0] // 32)
    miss = abs(math.log2(config["block_sizes"][0] / best))
    slope = 0.02 if kernel == "flat" else 1.0
    return 0.01 * shape[0] * (1 + slope * miss) * (1.0 if config["num_warps"] == 4 else 1.01)


class _Config:
    def __init__(self, **kw: Any) -> None:
        self.config = dict(kw)


def _write_log(base: str, kernel: str, shape: tuple[int, ...], configs: list[dict]) -> None:
    """A HELION_AUTOTUNE_LOG as Helion 1.4 writes it: CSV rows and a .meta.jsonl of configs."""
    run_id = hashlib.sha256(f"{base}{len(configs)}".encode()).hexdigest()[:12]
    ids = {}
    csv_path, meta_path = Path(base + ".csv"), Path(base + ".meta.jsonl")
    lines = [] if csv_path.exists() else ["run_id,timestamp_s,config_id,generation,status,perf_ms"]
    for i, cfg in enumerate(configs):
        cid = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]
        ids[cid] = cfg
        ms = landscape(kernel, shape, cfg)
        lines.append(f"{run_id},{10 + i:.2f},{cid},0,ok,{ms:.6f}")
    with csv_path.open("a") as f:
        f.write("\n".join(lines) + "\n")
    with meta_path.open("a") as f:
        f.write(json.dumps({"run_id": run_id, "configs": ids}) + "\n")


class _Kernel:
    """`helion.kernel(fn, **settings)`: a search over BLOCKS x warps plus the seeds."""

    def __init__(self, fn: Any, **settings: Any) -> None:
        self.fn = fn
        self.settings = types.SimpleNamespace(autotune_precompile="fork", **settings)
        self.settings.__dict__.setdefault("autotune_seed_configs", None)
        self.config: dict | None = None

    def bind(self, args: tuple) -> _Kernel:
        return self

    def _space(self) -> list[dict]:
        space = [{"block_sizes": [b], "num_warps": w} for b in BLOCKS for w in (4, 8)]
        for seed in self.settings.autotune_seed_configs or []:
            if seed.config not in space:
                space.append(seed.config)
        return space

    def autotune(self, args: tuple, *, force: bool = True) -> _Config:
        shape = tuple(args[0].shape)
        space = self._space()
        _write_log(self.settings.autotune_log, self.fn.__name__, shape, space)
        self.config = min(space, key=lambda c: landscape(self.fn.__name__, shape, c))
        return _Config(**self.config)

    def set_config(self, config: _Config) -> None:
        self.config = dict(config.config)

    def __call__(self, *args: Any) -> Any:
        return args[0] * 0


class _FiniteSearch:
    def __init__(self, kernel: _Kernel, args: tuple, configs: list[_Config]) -> None:
        self.kernel, self.args, self.configs = kernel, args, configs

    def benchmark_batch(self, configs: list[_Config], *, desc: str = "") -> list[Any]:
        shape = tuple(self.args[0].shape)
        name = self.kernel.fn.__name__
        _write_log(self.kernel.settings.autotune_log, name, shape, [c.config for c in configs])
        return [
            types.SimpleNamespace(config=c, perf=landscape(name, shape, c.config), status="ok")
            for c in configs
        ]

    def autotune(self, *, skip_cache: bool = False) -> Any:
        return self._autotune()


def flat(x: Any) -> Any:
    return x


def peaky(x: Any) -> Any:
    return x


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    torch = pytest.importorskip("torch")
    triton_testing = pytest.importorskip("triton.testing")
    helion = types.ModuleType("helion")
    helion.Config = _Config  # type: ignore[attr-defined]
    helion.kernel = _Kernel  # type: ignore[attr-defined]
    autotuner = types.ModuleType("helion.autotuner")
    autotuner.FiniteSearch = _FiniteSearch  # type: ignore[attr-defined]
    kernels = types.ModuleType("gpu_kernels")

    def make(shape: tuple[int, ...], device: str) -> Any:
        x = torch.zeros(*shape)
        return (x,), lambda: x * 0

    kernels._kernels = lambda: {"flat": (flat, make, {}), "peaky": (peaky, make, {})}  # type: ignore[attr-defined]
    kernels.DEFAULT_SHAPES = {  # type: ignore[attr-defined]
        name: [(256, 8), (1024, 8), (512, 8)] for name in ("flat", "peaky")
    }
    for name, module in (("helion", helion), ("helion.autotuner", autotuner)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, "gpu_kernels", kernels)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake H100")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(triton_testing, "do_bench", lambda fn, **kw: 0.01)
    saved_env, saved_path = dict(os.environ), list(sys.path)
    yield
    os.environ.clear()
    os.environ.update(saved_env)
    sys.path[:] = saved_path


def test_the_bench_runs_every_arm_and_the_report_reads_it(
    fake_gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sys, "argv", ["seeds_gpu.py", "--kernels", "flat,peaky", "--out", str(tmp_path)]
    )
    script = runpy.run_path(str(SCRIPT), run_name="seeds_gpu_test")
    assert script["main"]() == 0
    result = json.loads((tmp_path / "results.json").read_text())
    by = {(s["kernel"], s["shape_index"]): s for s in result["shapes"]}
    assert set(by) == {(k, i) for k in ("flat", "peaky") for i in range(3)}
    assert list(by["flat", 0]["arms"]) == ["quick"]
    second = by["flat", 1]
    assert second["mem_first_decision"]["trusted"] is True
    mem_first = second["arms"]["mem-first"]
    assert mem_first["mode"] == "memory" and mem_first["configs_timed_ok"] == 8
    assert second["arms"]["quick"]["configs_timed_ok"] == 14
    # The lone peak is not trusted: memory first is the quick+mem call itself, not run twice.
    peak = by["peaky", 1]
    assert peak["mem_first_decision"]["trusted"] is False
    assert peak["arms"]["mem-first"] == {"same_call_as": "quick+mem", "mode": "search"}
    # Each mode's memory holds its own: after a trusted shape, memory first held 14 + 8.
    assert by["flat", 2]["memory_before"]["mem-first"]["timings"] == 22
    assert by["flat", 2]["memory_before"]["quick+mem"]["timings"] == 14 + 14 + 4 - 4
    with tarfile.open(tmp_path / "logs.tar.gz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert "flat_1_mem_first.csv" in names
    run = analyse(tmp_path)
    row = [s for s in run["shapes"] if (s["kernel"], s["index"]) == ("flat", 1)][0]
    assert row["arms"]["mem-first"]["speed"] == pytest.approx(1.0)
    assert row["arms"]["mem-first"]["memory_held"]["timings"] == 14
    # The CPU rebuilds memory first's memory from the logs and reaches the run's decisions.
    for kernel, index in (("flat", 1), ("flat", 2), ("peaky", 1), ("peaky", 2)):
        (again,) = [s for s in run["shapes"] if (s["kernel"], s["index"]) == (kernel, index)]
        assert again["replay"]["verdict_matches_run"] is True
        assert again["replay"].get("candidates_match_run", True) is True
    (peak_row,) = [s for s in run["shapes"] if (s["kernel"], s["index"]) == ("peaky", 1)]
    assert peak_row["arms"]["mem-first"]["speed"] == peak_row["arms"]["quick+mem"]["speed"]
    table = markdown([run], "test")
    assert "| mem-first (search, the quick+mem call) |" in table
    assert "| mem-first (memory) |" in table


# -- the CPU replay over the committed H100 logs -----------------------------------------------


def test_modelled_wall_is_first_timing_plus_k_paces() -> None:
    rows = [{"status": "ok", "timestamp_s": t, "compile_time_s": "0.5"} for t in ("15", "17", "19")]
    rows.append({"status": "started", "timestamp_s": "1", "compile_time_s": "9"})
    assert replay_first.modelled_wall_s(rows, 8) == 15 + 8 * 2.0
    assert replay_first.modelled_wall_s(rows, 8, serial_compile=True) == 15 + 8 * 2.5
    assert replay_first.modelled_wall_s(rows[:1], 8) is None


def test_the_replay_of_the_h100_logs() -> None:
    runs = {run.name: replay_first.replay_run(run) for run in RUNS}
    (softmax,) = runs["h100-run1-softmax"]["shapes"]
    assert softmax["trusted"] and softmax["candidates_found"] == 0 and "speed" not in softmax
    rms = runs["h100-run2-rmsnorm"]["shapes"]
    assert [s["trusted"] for s in rms] == [True, True]
    assert [s["candidates_found"] for s in rms] == [4, 3]
    assert [round(s["speed"], 3) for s in rms] == [0.989, 0.995]
    assert all(s["wall_ratio_modelled"] < s["wall_ratio_modelled_serial"] < 0.5 for s in rms)
    (matmul,) = runs["h100-run3-matmul"]["shapes"]
    assert not matmul["trusted"] and "only 1 of 63 configurations" in matmul["reason"]
    assert matmul["seeded_arm"] is None
    assert matmul["one_generation"]["speed"] == pytest.approx(0.814, abs=1e-3)


def test_the_committed_replay_is_what_the_module_writes(tmp_path: Path) -> None:
    out = tmp_path / "replay"
    replay_first.main([*map(str, RUNS), "--out", str(out)])
    committed = json.loads((RESULTS / "replay-memory-first.json").read_text())
    assert json.loads(out.with_suffix(".json").read_text()) == committed
