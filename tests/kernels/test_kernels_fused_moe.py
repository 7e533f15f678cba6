"""The fused-MoE task: routing alignment, the kernel against its reference under the
interpreter (small shapes, float32), vLLM's vocabulary (space, default, file name), the
recorded-landscape timing function, and the fp8 task on a GPU."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to the interpreter first)
from tunemem.kernels import moe_space
from tunemem.kernels.harness import evaluate, prepare_problem
from tunemem.kernels.moe_recorded import NotRecordedError, recorded_benchmark
from tunemem.kernels.tasks.fused_moe import TASK, check
from tunemem.kernels.tasks.fused_moe_kernels import align_block_size

REPO = Path(__file__).resolve().parents[2]
LANDSCAPE = REPO / "bench" / "results" / "moe" / "h200-landscape"
CONFIG = {
    "BLOCK_SIZE_M": 16,
    "BLOCK_SIZE_N": 32,
    "BLOCK_SIZE_K": 64,
    "GROUP_SIZE_M": 1,
    "num_warps": 4,
    "num_stages": 2,
}


@pytest.mark.parametrize("block_m", [16, 64])
def test_alignment_sorts_copies_by_expert_and_pads_each_run(block_m: int) -> None:
    generator = torch.Generator().manual_seed(3)
    ids = torch.stack([torch.randperm(6, generator=generator)[:2] for _ in range(37)])
    sorted_ids, expert_ids, total = align_block_size(ids.to(torch.int32), block_m, 6)
    flat = ids.reshape(-1)
    copies = flat.numel()
    assert sorted_ids.numel() == copies + 6 * (block_m - 1)
    real = sorted_ids[sorted_ids < copies]
    assert sorted(real.tolist()) == list(range(copies))  # every copy exactly once
    assert int(total) % block_m == 0
    for block in range(int(total) // block_m):
        slots = sorted_ids[block * block_m : (block + 1) * block_m]
        members = slots[slots < copies]
        # a block holds one expert's copies only, and that expert is the block's
        assert (flat[members.long()] == int(expert_ids[block])).all()
    assert (sorted_ids[int(total) :] == copies).all()


def test_alignment_refuses_a_block_that_is_no_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        align_block_size(torch.zeros((4, 2), dtype=torch.int32), 48, 4)


@pytest.mark.parametrize(
    "shape",
    [TASK.small_shapes[0], pytest.param(TASK.small_shapes[1], marks=pytest.mark.slow)],
    ids=lambda s: s.name,
)
def test_kernel_matches_the_reference_under_the_interpreter(shape) -> None:
    problem = prepare_problem(TASK, shape.dims, "float32", "cpu", seed=5)
    other = {**CONFIG, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 16}
    for config in (CONFIG, other):
        result = evaluate(TASK, problem, config)
        assert result.correct, result.error
        assert result.metrics["rel_norm_error"] < 1e-4


def test_a_wrong_kernel_is_caught() -> None:
    shape = TASK.small_shapes[0]
    problem = prepare_problem(TASK, shape.dims, "float32", "cpu", seed=5)

    def drops_routing_weights(config, x, w1, w2, weights, ids):
        return TASK.launch(config, x, w1, w2, torch.full_like(weights, 0.5), ids)

    result = evaluate(TASK, problem, CONFIG, launch=drops_routing_weights)
    assert result.correct is False and result.error_category == "incorrect"


def test_configurations_past_shared_memory_or_off_the_grid_are_refused() -> None:
    big = {**CONFIG, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "num_stages": 5}
    assert check(big, {}).category == "resources"
    assert check({**CONFIG, "BLOCK_SIZE_M": 8}, {}).category == "other"
    assert check(CONFIG, {}) is None


def test_vllm_space_default_and_file_name() -> None:
    space = moe_space.full_space()
    assert len(space) == 1920 and len({moe_space.config_key(c) for c in space}) == 1920
    assert moe_space.default_config(8, 8)["BLOCK_SIZE_M"] == 16  # M <= E
    assert moe_space.default_config(9, 8) == {
        "BLOCK_SIZE_M": 64,
        "BLOCK_SIZE_N": 64,
        "BLOCK_SIZE_K": 32,
        "GROUP_SIZE_M": 8,
        "num_warps": 4,
        "num_stages": 3,
    }
    assert (
        moe_space.file_name(8, 14336, "NVIDIA H200", "fp8_w8a8")
        == "E=8,N=14336,device_name=NVIDIA_H200,dtype=fp8_w8a8.json"
    )
    assert (
        moe_space.file_name(128, 768, "NVIDIA H200") == "E=128,N=768,device_name=NVIDIA_H200.json"
    )
    assert moe_space.nearest_entry({1: "a", 64: "b", 256: "c"}, 100) == "b"
    assert moe_space.sample_space(384, 0) == moe_space.sample_space(384, 0)
    with pytest.raises(ValueError, match="dtype"):
        moe_space.file_name(8, 8, "x", "int4")


def test_normalise_fills_triton_defaults_and_drops_other_keys() -> None:
    config = moe_space.normalise(
        {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "kpack": 2}
    )
    assert config["num_warps"] == 4 and config["num_stages"] == 3 and "kpack" not in config
    with pytest.raises(KeyError):
        moe_space.normalise({"BLOCK_SIZE_M": 16})


def test_recorded_benchmark_answers_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "land.jsonl.gz"
    rows = [
        {"m": 1, "config": CONFIG, "us": 12.5, "error": None},
        {"m": 1, "config": {**CONFIG, "num_stages": 3}, "us": None, "error": "failed"},
    ]
    with gzip.open(path, "wt") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    benchmark, configs, sizes = recorded_benchmark(path)
    assert sizes == [1] and len(configs) == 2
    assert benchmark(CONFIG, 1, 8, 64, 32, 2) == 12.5
    with pytest.raises(RuntimeError):
        benchmark({**CONFIG, "num_stages": 3}, 1)
    with pytest.raises(NotRecordedError):
        benchmark(CONFIG, 2)


def test_the_committed_h200_landscape_covers_every_case() -> None:
    from tunemem.kernels.moe_plan import BATCH_SIZES, CASES

    for name, *_ in CASES:
        _, configs, sizes = recorded_benchmark(LANDSCAPE / f"{name}.jsonl.gz")
        assert sizes == BATCH_SIZES and len(configs) > 384


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="fp8 needs a GPU with fp8 matrix units")
def test_fp8_task_matches_its_reference_on_the_gpu() -> None:
    from tunemem.kernels.tasks.fused_moe_fp8 import TASK as FP8

    dims = {"M": 33, "E": 8, "N": 256, "K": 512, "topk": 2}
    problem = prepare_problem(FP8, dims, "bfloat16", "cuda", seed=2)
    result = evaluate(FP8, problem, {**CONFIG, "BLOCK_SIZE_K": 128})
    assert result.correct, result.error
