"""Row softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).

Template: each program owns ROWS_PER_PROGRAM rows. When a row fits in BLOCK_N it is read once
(single pass); otherwise an online pass keeps a running max and rescaled sum per lane, and a
second pass writes the normalised values, so any row length works.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from tunemem.kernels.tasks.base import (
    ConfigViolation,
    KernelTask,
    ShapeCase,
    random_normal,
    row_block_violation,
)


@triton.jit
def softmax_rows_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    BLOCK_N: tl.constexpr,
    ROWS_PER_PROGRAM: tl.constexpr,
    SINGLE_PASS: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    for r in tl.range(0, ROWS_PER_PROGRAM, num_stages=NUM_STAGES):
        row = pid * ROWS_PER_PROGRAM + r
        # Rows past the end get an empty column range, so every access below is masked off.
        row_cols = tl.where(row < n_rows, n_cols, 0)
        x_row = x_ptr + row.to(tl.int64) * x_row_stride
        y_row = y_ptr + row.to(tl.int64) * y_row_stride
        if SINGLE_PASS:
            mask = cols < row_cols
            x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
            row_max = tl.max(x, axis=0)
            e = tl.exp(x - row_max)
            denom = tl.sum(e, axis=0)
            tl.store(y_row + cols, (e / denom).to(y_ptr.dtype.element_ty), mask=mask)
        else:
            lane_max = tl.full([BLOCK_N], -float("inf"), tl.float32)
            lane_sum = tl.zeros([BLOCK_N], tl.float32)
            for start in range(0, n_cols, BLOCK_N):
                mask = start + cols < row_cols
                x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
                new_max = tl.maximum(lane_max, x)
                finite = new_max > -float("inf")
                rescale = tl.where(finite, tl.exp(lane_max - new_max), 0.0)
                lane_sum = lane_sum * rescale + tl.where(finite, tl.exp(x - new_max), 0.0)
                lane_max = new_max
            row_max = tl.max(lane_max, axis=0)
            lane_weight = tl.where(lane_max > -float("inf"), tl.exp(lane_max - row_max), 0.0)
            denom = tl.sum(lane_sum * lane_weight, axis=0)
            for start in range(0, n_cols, BLOCK_N):
                mask = start + cols < row_cols
                x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
                y = tl.exp(x - row_max) / denom
                tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(config: dict[str, Any], x: torch.Tensor) -> torch.Tensor:
    """Run the softmax template with one configuration; returns a new tensor."""
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rows = config["ROWS_PER_PROGRAM"]
    grid = (triton.cdiv(n_rows, rows),)
    softmax_rows_kernel[grid](
        x,
        y,
        n_rows,
        n_cols,
        x.stride(0),
        y.stride(0),
        BLOCK_N=config["BLOCK_N"],
        ROWS_PER_PROGRAM=rows,
        SINGLE_PASS=config["BLOCK_N"] >= n_cols,
        NUM_STAGES=config["NUM_STAGES"],
        num_warps=config["num_warps"],
    )
    return y


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    """A row block must not overflow registers nor leave most threads idle."""
    return row_block_violation(config, dims["cols"])


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    return (random_normal((dims["rows"], dims["cols"]), dtype, device, seed) * 2.0,)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1)


def torch_op(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _shape(name: str, rows: int, cols: int, model: str | None = None, scenario: str | None = None):
    return ShapeCase(name, {"rows": rows, "cols": cols}, model, scenario)


TASK = KernelTask(
    name="softmax",
    op="softmax",
    kernel="softmax_rows_kernel",
    description="row softmax over the last dimension, fp32 arithmetic",
    parameter_space={
        "BLOCK_N": [256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
        "num_warps": [1, 2, 4, 8, 16, 32],
        "ROWS_PER_PROGRAM": [1, 2, 4, 8],
        "NUM_STAGES": [1, 2, 3],
    },
    tuning_space={
        "BLOCK_N": [4096, 8192, 16384, 32768],
        "num_warps": [4, 8, 16, 32],
        "ROWS_PER_PROGRAM": [1, 4],
        "NUM_STAGES": [1, 2],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=lambda d: 5.0 * d["rows"] * d["cols"],
    bytes_moved=lambda d, elt: 2.0 * d["rows"] * d["cols"] * elt,
    bound="memory",
    shapes=[
        _shape("attn-scores-4096x8192", 4096, 8192, scenario="prefill"),
        _shape("attn-scores-16384x4096", 16384, 4096, scenario="prefill"),
        _shape("attn-scores-65536x4096", 65536, 4096, scenario="prefill"),
        _shape("attn-scores-8192x16384", 8192, 16384, scenario="prefill"),
        _shape("llama3-8b-logits-decode-b64", 64, 128256, "Llama-3-8B", "decode"),
        _shape("llama2-7b-logits-prefill-2k", 2048, 32000, "Llama-2-7B", "prefill"),
    ],
    small_shapes=[_shape("tiny-5x37", 5, 37), _shape("tiny-4x300", 4, 300)],
    forbidden_ops=frozenset({"_softmax", "softmax", "exp", "logsumexp"}),
)
