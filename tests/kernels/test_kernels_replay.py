"""The replay runner: recorded measurements back, failures and restrictions as infeasible."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tunemem.kernels.runners.replay import Recording, ReplayRunner

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kerneltuner"


def _synthetic(tmp_path: Path) -> Path:
    """A SYNTHETIC three-configuration cache (invented times) with each kind of outcome."""
    data = {
        "device_name": "NVIDIA A100-PCIE-40GB",
        "kernel_name": "synthetic_kernel",
        "problem_size": [64],
        "tune_params_keys": ["bx", "tx"],
        "tune_params": {"bx": [32, 64], "tx": [1, 2]},
        "objective": "time",
        "cache": {
            "32,1": {"bx": 32, "tx": 1, "time": 2.0, "times": [2.1, 1.9], "GFLOP/s": 5.0},
            "32,2": {"bx": 32, "tx": 2, "time": "CompilationFailedConfig"},
            "64,1": {"bx": 64, "tx": 1, "time": "RuntimeFailedConfig"},
        },
    }
    path = tmp_path / "synthetic.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


def test_recorded_measurement_is_the_outcome(tmp_path: Path) -> None:
    runner = ReplayRunner(path=_synthetic(tmp_path))
    result = runner.evaluate({"bx": 32, "tx": 1})
    assert result.feasible and result.latency_ms == 2.0 and result.latency_min_ms == 1.9
    assert result.repetitions == 2 and result.metrics["GFLOP/s"] == 5.0
    # the spread of the recorded times goes with the outcome (repeated timings)
    assert abs(result.metrics["latency_std_ms"] - 0.1) < 1e-9
    assert runner.parameter_space() == {"bx": [32, 64], "tx": [1, 2]}
    assert runner.task.op == "synthetic" and runner.context.chip == "a100"
    assert runner.context.backend == "cuda"


@pytest.mark.parametrize(
    ("config", "category"),
    [
        ({"bx": 32, "tx": 2}, "compile"),
        ({"bx": 64, "tx": 1}, "runtime"),
        ({"bx": 64, "tx": 2}, "rejected"),  # restricted: not in the recording
        ({"bx": 48, "tx": 1}, "rejected"),  # outside the space
        ({"bx": 32}, "rejected"),  # incomplete
    ],
)
def test_failures_and_restrictions_are_infeasible(
    tmp_path: Path, config: dict, category: str
) -> None:
    result = ReplayRunner(path=_synthetic(tmp_path)).evaluate(config)
    assert not result.feasible
    assert result.error_category == category
    assert result.latency_ms is None


def test_runner_parameter_space_is_a_copy(tmp_path: Path) -> None:
    runner = ReplayRunner(path=_synthetic(tmp_path))
    runner.parameter_space()["bx"].append(999)
    assert 999 not in runner.parameter_space()["bx"]


def test_not_a_cache_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"results": []}))
    with pytest.raises(ValueError, match="Kernel Tuner cache"):
        Recording(path)


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data/kerneltuner (real caches)")
def test_real_cache_replays_its_optimum_and_its_failures() -> None:
    recording = Recording(SHARED / "convolution" / "A100.json.gz")
    runner = ReplayRunner(recording=recording)
    best_config, best = recording.best()
    assert runner.evaluate(best_config).latency_ms == pytest.approx(best)
    failed = next(
        dict(zip(recording.param_names, key, strict=True))
        for key, m in recording.measurements.items()
        if m.failure == "CompilationFailedConfig"
    )
    assert runner.evaluate(failed).error_category == "compile"
    # Blank device_name (MI250X cache): the chip comes from the file name.
    assert Recording(SHARED / "convolution" / "MI250X.json.gz").context.chip == "mi250x"


OLD_FORMAT = (
    Path(__file__).resolve().parents[1]
    / "ingest/fixtures/kerneltuner_old/vector_add_old_format_synthetic.json"
)


def test_old_format_cache_replays_from_its_keys() -> None:
    """Older Kernel Tuner caches (SYNTHETIC fixture) keep parameters only in the key."""
    recording = Recording(OLD_FORMAT)
    assert recording.best() == ({"block_size_x": 128, "tile": 2, "layout": "col"}, 0.27)
    runner = ReplayRunner(recording=recording)
    assert runner.evaluate({"block_size_x": 64, "tile": 1, "layout": "row"}).latency_ms == 0.52
    failed = runner.evaluate({"block_size_x": 256, "tile": 2, "layout": "col"})
    assert not failed.feasible and failed.error_category == "runtime"


def test_cache_without_usable_entries_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nothing.json"
    path.write_text(json.dumps({"tune_params_keys": ["bx"], "cache": {"1,2": {"time": 1.0}}}))
    with pytest.raises(ValueError, match="nothing.json: the cache holds no usable configuration"):
        Recording(path)
    failed_only = tmp_path / "failed_only.json"
    failed_only.write_text(
        json.dumps({"tune_params_keys": ["bx"], "cache": {"1": {"time": "RuntimeFailedConfig"}}})
    )
    with pytest.raises(ValueError, match="failed_only.json: no configuration .* recorded time"):
        Recording(failed_only).best()
