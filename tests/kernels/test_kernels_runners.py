"""Runner factory, the cpu runner's interface, the sweep's native trajectories, GPU runs."""

from __future__ import annotations

import json

import pytest
import torch

import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to the interpreter first)
from tunemem.ingest.records import TrajectoryRecord
from tunemem.kernels.catalogue import get_task
from tunemem.kernels.runners import create_runner, runner_kinds
from tunemem.kernels.runners.base import Runner
from tunemem.kernels.sweep import (
    best_attempt,
    candidate_configs,
    chip_identity,
    read_trajectories,
    sweep_shape,
    write_trajectories,
)

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")


def test_create_runner_names_valid_kinds_on_a_wrong_one():
    with pytest.raises(ValueError, match="cuda, cpu, replay"):
        create_runner("tpu")
    assert runner_kinds() == ["cuda", "cpu", "replay"]


def test_unknown_task_names_the_catalogue():
    with pytest.raises(KeyError, match="softmax"):
        create_runner("cpu", task="conv3d")


def test_cpu_runner_is_a_runner_with_the_declared_space():
    runner = create_runner("cpu", task="gemm")
    assert isinstance(runner, Runner) and runner.name == "cpu"
    assert runner.shape.name == get_task("gemm").small_shapes[0].name
    declared, space = get_task("gemm").parameter_space, runner.parameter_space()
    assert list(space) == list(declared)
    assert all(space[name] == [v for v in declared[name] if v in space[name]] for name in space)


def test_live_space_drops_only_values_no_valid_config_uses():
    task = get_task("softmax")
    runner = create_runner("cpu", task="softmax", shape={"rows": 4, "cols": 300})
    space = runner.parameter_space()
    valid = [c for c in task.configs() if task.valid(c, runner.shape.dims)]
    for name in task.parameter_space:
        used = {c[name] for c in valid}
        assert set(space[name]) == used, name
    assert max(space["BLOCK_N"]) < max(task.parameter_space["BLOCK_N"])  # 512 >= 300 rows
    tuning = create_runner("cpu", task="softmax", shape="tiny-4x300", space="tuning")
    assert set(tuning.parameter_space()["BLOCK_N"]) <= set(task.tuning_space["BLOCK_N"])
    with pytest.raises(ValueError, match="tuning, full"):
        create_runner("cpu", task="softmax", space="everything")


def test_cpu_runner_accepts_explicit_dims_and_reports_missing_params():
    runner = create_runner("cpu", task="rmsnorm", shape={"tokens": 2, "hidden": 64})
    assert runner.shape.dims == {"tokens": 2, "hidden": 64}
    result = runner.evaluate({"BLOCK_N": 256})
    assert result.error_category == "other" and "lacks" in result.error


def test_candidate_configs_are_valid_and_sampled_deterministically():
    task = get_task("attention")
    dims = task.shapes[1].dims
    every = candidate_configs(task, dims)
    assert every and all(task.valid(c, dims) for c in every)
    sample = candidate_configs(task, dims, limit=3, seed=1)
    assert len(sample) == 3 and sample == candidate_configs(task, dims, limit=3, seed=1)
    assert all(c in every for c in sample)


def test_sweep_writes_ingestable_native_trajectories(tmp_path):
    task = get_task("softmax")
    case = task.small_shapes[1]
    runner = create_runner("cpu", task="softmax", shape=case.name)
    configs = [
        {"BLOCK_N": 256, "num_warps": 2, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 1},
        {"BLOCK_N": 512, "num_warps": 32, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 1},
    ]
    record = sweep_shape(
        task,
        case,
        runner,
        configs,
        device_name="cpu (Triton interpreter)",
        dtype="float32",
        run_id="test",
    )
    assert [a.index for a in record.attempts] == [0, 1]
    assert record.attempts[0].feasible and not record.attempts[1].feasible
    assert record.source_format == "native" and not record.synthetic
    assert record.task.op == "softmax" and record.task.signature["cols"] == 300
    assert record.evidence["harness_version"] and record.evidence["measured_at"]
    assert best_attempt(record) is None  # the interpreter times nothing
    path = tmp_path / "softmax.jsonl"
    assert write_trajectories([record], path) == 1
    line = json.loads(path.read_text().splitlines()[0])
    assert line["version"] == 1
    again = read_trajectories(path)[0]
    assert again.id == record.id and isinstance(again, TrajectoryRecord)


def test_chip_identity_uses_platforms():
    assert chip_identity("NVIDIA H200") == ("h200", "cuda")


def test_cuda_runner_refuses_without_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: refusal is for machines without one")
    with pytest.raises(RuntimeError, match="GPU"):
        create_runner("cuda", task="softmax")


@pytest.mark.gpu
@needs_gpu
def test_cuda_runner_times_a_feasible_config():  # pragma: no cover - runs on GPU machines
    runner = create_runner(
        "cuda", task="rmsnorm", shape="llama3-8b-decode-b64", rep_ms=5, warmup_ms=2
    )
    result = runner.evaluate(
        {"BLOCK_N": 4096, "num_warps": 8, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 1}
    )
    assert result.feasible and result.latency_ms > 0 and result.repetitions > 1
    assert result.metrics["gbps"] > 0


def test_replay_kind_resolves_to_the_replay_runner_class():
    import importlib

    from tunemem.kernels.runners import RUNNER_CLASSES

    module_name, class_name = RUNNER_CLASSES["replay"]
    runner_class = getattr(importlib.import_module(module_name), class_name)
    assert issubclass(runner_class, Runner)
