"""Every reader on real files (../shared/data) or labelled fixtures, detection, conformance."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from tunemem.ingest.readers import READERS, detect_format, get_reader, iter_paths, read_any
from tunemem.ingest.records import ERROR_CATEGORIES, AttemptRecord, RejectedRecord, TrajectoryRecord
from tunemem.ingest.samples import sample_paths

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

# One input per reader: (path relative to its root, root is "data" or "fixtures").
EXAMPLES = {
    "kerneltuner": ("data", "kerneltuner/convolution/A100.json.gz"),
    "t4": ("data", "kerneltuner/convolution/A100_T4.json.gz"),
    "vllm-moe": (
        "data",
        "vllm_fused_moe/E=128,N=384,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8,block_shape=[128,128].json",
    ),
    "kernelbench-timing": ("data", "kernelbench_timings/A100_modal"),
    # Real Triton cache written on an H200 (see fixtures/README.md).
    "triton-autotune": (
        "fixtures",
        "triton_autotune/h200/2H2TEBS2S3MH3U3CGU4MA4Y7UXZBW4IVQH3TETEUOLLINJLD5MMA/softmax_kernel.autotune.json",
    ),
    # Real Helion 1.4.0 autotune log written on an H100 (see fixtures/README.md).
    "helion-autotune": ("fixtures", "helion_autotune/rms_norm_0_quick.csv"),
    # Hand-written from the published schema, values synthetic.
    "kernelbench-run": ("fixtures", "kernelbench_run/level1_demo_run"),
    "openevolve": ("fixtures", "openevolve/softmax_evolve/checkpoints/checkpoint_3"),
}


def example(fmt: str, tmp_path: Path) -> Path:
    if fmt == "native":
        from tunemem.ingest.readers.native import write_native

        source = FIXTURES / EXAMPLES["openevolve"][1]
        out = tmp_path / "run.jsonl"
        write_native([r for r in read_any([source]) if isinstance(r, TrajectoryRecord)], out)
        return out
    root, rel = EXAMPLES[fmt]
    base = DATA if root == "data" else FIXTURES
    if not base.is_dir():
        pytest.skip(f"real data set not found at {base}")
    return base / rel


@pytest.mark.parametrize("fmt", list(READERS))
def test_reader_conformance(fmt: str, tmp_path: Path) -> None:
    path = example(fmt, tmp_path)
    assert detect_format(path) == fmt
    reader = get_reader(fmt)
    assert reader.FORMAT == fmt
    records = list(reader.read(path))
    trajectories = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert trajectories, f"{fmt} yielded no trajectory"
    for traj in trajectories:
        assert traj.task.op and traj.context.chip and traj.context.backend
        assert traj.attempts
        assert [a.index for a in traj.attempts] == list(range(len(traj.attempts)))
        for a in traj.attempts:
            assert isinstance(a, AttemptRecord) and isinstance(a.params, dict)
            assert isinstance(a.compiled, bool) and a.correct in (True, False, None)
            assert a.error_category is None or a.error_category in ERROR_CATEGORIES
            assert (a.error_category is None) == a.feasible or a.correct is False
            if a.latency_ms is not None:
                assert isinstance(a.latency_ms, float) and math.isfinite(a.latency_ms)
                assert a.latency_ms >= 0
            assert all(isinstance(v, float) for v in a.metrics.values())
    # Reading twice gives the same ids (idempotent ingest).
    again = [r.id for r in reader.read(path) if isinstance(r, TrajectoryRecord)]
    assert again == [t.id for t in trajectories]


def test_kerneltuner_real_cache(shared_data: Path) -> None:
    traj = next(read_any([shared_data / "kerneltuner/convolution/A100.json.gz"]))
    assert isinstance(traj, TrajectoryRecord)
    assert (traj.task.op, traj.task.kernel) == ("convolution", "convolution_kernel")
    assert traj.task.signature["problem_size"] == [4096, 4096]
    assert (traj.context.chip, traj.context.backend) == ("a100", "cuda")
    assert len(traj.attempts) == 4362
    categories = [a.error_category for a in traj.attempts if not a.feasible]
    assert categories.count("runtime") == 155 and categories.count("compile") == 6
    first = traj.attempts[0]
    assert first.params["block_size_x"] == 16 and first.repetitions == 32
    assert first.latency_ms == pytest.approx(3.8753279224038124)
    assert first.latency_min_ms == pytest.approx(3.8696959018707275)
    assert first.metrics["GFLOP/s"] == pytest.approx(1948.1569950129526)


def test_kerneltuner_empty_device_name_uses_file_name(shared_data: Path) -> None:
    traj = next(read_any([shared_data / "kerneltuner/dedispersion/MI250X.json.gz"]))
    assert traj.context.chip == "mi250x" and traj.context.backend == "hip"
    assert traj.context.chip_raw == "" and traj.evidence["chip_from"] == "file_name"


def test_t4_matches_cache_of_same_run(shared_data: Path) -> None:
    t4 = next(read_any([shared_data / "kerneltuner/convolution/A100_T4.json.gz"]))
    cache = next(read_any([shared_data / "kerneltuner/convolution/A100.json.gz"]))
    assert t4.task.op == cache.task.op and t4.context.chip == cache.context.chip
    assert [a.params for a in t4.attempts] == [a.params for a in cache.attempts]
    assert [a.latency_ms for a in t4.attempts] == [a.latency_ms for a in cache.attempts]
    assert [a.error_category for a in t4.attempts] == [a.error_category for a in cache.attempts]


def test_vllm_name_parsing_and_unmeasured_attempts(shared_data: Path) -> None:
    name = "E=128,N=384,device_name=NVIDIA_GB200,dtype=fp8_w8a8,block_shape=[128,128].json"
    traj = next(read_any([shared_data / "vllm_fused_moe" / name]))
    assert traj.task.signature == {
        "E": 128,
        "N": 384,
        "dtype": "fp8_w8a8",
        "block_shape": [128, 128],
    }
    assert traj.context.chip == "gb200" and traj.context.backend == "cuda"
    assert traj.attempts[0].params["M"] == 1 and "BLOCK_SIZE_M" in traj.attempts[0].params
    assert all(a.latency_ms is None for a in traj.attempts)
    flydsl = "E=384,N=256,device_name=AMD_Instinct_MI350X,dtype=int4_w4a16,backend=flydsl.json"
    other = next(read_any([shared_data / "vllm_fused_moe" / flydsl]))
    assert other.task.signature["backend"] == "flydsl" and other.context.backend == "hip"


def test_kernelbench_timing_joins_modes_per_problem(shared_data: Path) -> None:
    trajs = [r for r in read_any([shared_data / "kernelbench_timings/A100_modal"])]
    assert len(trajs) == 250 and all(isinstance(t, TrajectoryRecord) for t in trajs)
    first = trajs[0]
    assert first.task.op == "square_matrix_multiplication"
    assert [a.params["mode"] for a in first.attempts] == ["eager", "torch.compile inductor default"]
    assert first.baseline_latency_ms == first.attempts[0].latency_ms == pytest.approx(1.26)
    assert first.context.chip == "a100"


def test_kernelbench_run_fixture() -> None:
    records = list(read_any([FIXTURES / "kernelbench_run/level1_demo_run"]))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    trajs = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert [r.position for r in rejects] == ["['23']['1']"]
    assert [t.task.op for t in trajs] == [
        "kernelbench_level1_problem19",
        "kernelbench_level1_problem23",
    ]
    cats = [a.error_category for a in trajs[0].attempts]
    assert cats == [None, "compile", "incorrect", None]
    assert trajs[0].attempts[0].code and "relu" in trajs[0].attempts[0].code
    assert trajs[0].context.chip == "h100"


def test_openevolve_fixture() -> None:
    records = list(read_any([FIXTURES / "openevolve/softmax_evolve"]))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    (traj,) = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert rejects and rejects[0].path.endswith("broken.json")
    assert [a.params["program_id"] for a in traj.attempts] == ["a0", "b1", "b2", "c3"]
    assert traj.task.op == "softmax" and traj.evidence["latency_metric"] == "runtime"
    assert traj.attempts[2].error_category == "incorrect"


def test_auto_detection_of_every_sample() -> None:
    expected = {"kerneltuner", "vllm-moe", "kernelbench-timing"}
    assert {detect_format(p) for p in sample_paths()} == expected
    assert all(isinstance(r, TrajectoryRecord) for r in read_any(sample_paths()))


def test_iter_paths_keeps_folder_sources_whole() -> None:
    paths = list(iter_paths([FIXTURES]))
    assert FIXTURES / "kernelbench_run/level1_demo_run" in paths
    assert FIXTURES / "openevolve/softmax_evolve/checkpoints/checkpoint_3" in paths
    assert not any(p.name.endswith("_kernel.py") for p in paths)


def test_get_reader_names_valid_formats() -> None:
    with pytest.raises(ValueError, match="valid formats: auto, native, kerneltuner"):
        get_reader("csv")


OLD_FORMAT = FIXTURES / "kerneltuner_old/vector_add_old_format_synthetic.json"


def test_kerneltuner_old_format_reads_parameters_from_keys() -> None:
    """Older Kernel Tuner caches (SYNTHETIC fixture): entries hold only `time`."""
    assert detect_format(OLD_FORMAT) == "kerneltuner"
    records = list(read_any([OLD_FORMAT]))
    assert not [r for r in records if isinstance(r, RejectedRecord)]
    (traj,) = records
    assert isinstance(traj, TrajectoryRecord)
    assert (traj.task.op, traj.context.chip) == ("vector_add", "rtx-3090")
    assert traj.task.signature == {
        "problem_size": None,
        "tune_params_keys": ["block_size_x", "tile", "layout"],
    }
    assert traj.evidence["objective"] == "time"
    assert [a.params for a in traj.attempts[:2]] == [
        {"block_size_x": 64, "tile": 1, "layout": "row"},
        {"block_size_x": 128, "tile": 1, "layout": "row"},
    ]
    assert isinstance(traj.attempts[0].params["block_size_x"], int)
    assert [a.latency_ms for a in traj.attempts] == [0.52, 0.31, 0.29, 0.27, None, 0.44]
    failed = traj.attempts[4]
    assert not failed.feasible and failed.error_category == "runtime"


def test_kerneltuner_key_values_without_declared_values(tmp_path: Path) -> None:
    """Without `tune_params`, key parts parse as JSON numbers, else stay text (SYNTHETIC)."""
    path = tmp_path / "nodecl.json"
    path.write_text(
        json.dumps(
            {
                "device_name": "NVIDIA A100-PCIE-40GB",
                "tune_params_keys": ["bx", "ratio", "mode"],
                "cache": {"32,0.5,fast": {"time": 1.5}, "1,2": {"time": 1.0}},
            }
        )
    )
    records = list(read_any([path]))
    traj = next(r for r in records if isinstance(r, TrajectoryRecord))
    assert traj.attempts[0].params == {"bx": 32, "ratio": 0.5, "mode": "fast"}
    (reject,) = [r for r in records if isinstance(r, RejectedRecord)]
    assert "key has 2 values for 3 parameters" in reject.reason


def test_kerneltuner_partial_entry_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    path.write_text(
        json.dumps(
            {
                "device_name": "NVIDIA A100-PCIE-40GB",
                "tune_params_keys": ["bx", "tx"],
                "cache": {"32,1": {"bx": 32, "time": 1.5}, "64,1": {"time": 1.0}},
            }
        )
    )
    records = list(read_any([path]))
    (reject,) = [r for r in records if isinstance(r, RejectedRecord)]
    assert reject.reason == "entry lacks tuning parameter 'tx'"
    traj = next(r for r in records if isinstance(r, TrajectoryRecord))
    assert [a.params for a in traj.attempts] == [{"bx": 64, "tx": 1}]


def test_kerneltuner_cache_with_nothing_usable_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "empty_cache.json"
    path.write_text(
        json.dumps(
            {"device_name": "x", "tune_params_keys": ["bx"], "cache": {"1,2": {"time": 1.0}}}
        )
    )
    records = list(read_any([path]))
    assert not [r for r in records if isinstance(r, TrajectoryRecord)]
    (file_reject,) = records  # one line for the file, no reject per entry
    assert file_reject.position == "file" and file_reject.path == str(path)
    assert "no usable configuration" in file_reject.reason
    assert "none of its 1 entries" in file_reject.reason


@pytest.mark.parametrize("folder", ["gemm_clblast", "pnpoly", "convolution_v1"])
def test_kerneltuner_new_real_caches_read(shared_data: Path, folder: str) -> None:
    """The CLBlast GEMM, pnpoly and old convolution caches read without rejects."""
    paths = sorted((shared_data / "kerneltuner" / folder).glob("*.json.gz"))
    assert len(paths) == 4
    chips = set()
    for path in paths:
        records = list(read_any([path]))
        assert not [r for r in records if isinstance(r, RejectedRecord)], path
        (traj,) = records
        assert isinstance(traj, TrajectoryRecord)
        assert len(traj.attempts) == len(json.loads(gzip.open(path).read())["cache"])
        chips.add(traj.context.chip)
    assert chips == {"rtx-2080-ti", "rtx-3060-laptop", "rtx-3090", "titan-rtx"}
