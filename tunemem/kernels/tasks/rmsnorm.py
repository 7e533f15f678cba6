"""RMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight, over the hidden dimension.

Template: each program owns ROWS_PER_PROGRAM token rows. A row that fits in BLOCK_N is read
once; a longer one is read twice (sum of squares, then scale), never materialising x^2.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tunemem.kernels.tasks.base import (
    ConfigViolation,
    KernelTask,
    ShapeCase,
    random_normal,
    row_block_violation,
)

EPS = 1e-6


@triton.jit
def rmsnorm_rows_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    eps,
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
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
            w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            tl.store(y_row + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)
        else:
            squares = tl.zeros([BLOCK_N], tl.float32)
            for start in range(0, n_cols, BLOCK_N):
                mask = start + cols < row_cols
                x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
                squares += x * x
            inv_rms = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
            for start in range(0, n_cols, BLOCK_N):
                in_row = start + cols < n_cols
                mask = start + cols < row_cols
                x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + start + cols, mask=in_row, other=0.0).to(tl.float32)
                tl.store(
                    y_row + start + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask
                )


def launch(config: dict[str, Any], x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Run the RMSNorm template with one configuration; returns a new tensor."""
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rows = config["ROWS_PER_PROGRAM"]
    rmsnorm_rows_kernel[(triton.cdiv(n_rows, rows),)](
        x,
        weight,
        y,
        n_rows,
        n_cols,
        x.stride(0),
        y.stride(0),
        EPS,
        BLOCK_N=config["BLOCK_N"],
        ROWS_PER_PROGRAM=rows,
        SINGLE_PASS=config["BLOCK_N"] >= n_cols,
        NUM_STAGES=config["NUM_STAGES"],
        num_warps=config["num_warps"],
    )
    return y


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    """A row block must not overflow registers nor leave most threads idle."""
    return row_block_violation(config, dims["hidden"])


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    x = random_normal((dims["tokens"], dims["hidden"]), dtype, device, seed)
    weight = 1.0 + 0.1 * random_normal((dims["hidden"],), torch.float32, device, seed + 7919)
    return x, weight.to(dtype)


def reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()


def torch_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, EPS)


def _shape(name: str, tokens: int, hidden: int, model: str | None, scenario: str | None):
    return ShapeCase(name, {"tokens": tokens, "hidden": hidden}, model, scenario)


TASK = KernelTask(
    name="rmsnorm",
    op="rmsnorm",
    kernel="rmsnorm_rows_kernel",
    description="RMSNorm over the hidden dimension with a learned weight, fp32 arithmetic",
    parameter_space={
        "BLOCK_N": [256, 512, 1024, 2048, 4096, 8192, 16384],
        "num_warps": [1, 2, 4, 8, 16, 32],
        "ROWS_PER_PROGRAM": [1, 2, 4, 8],
        "NUM_STAGES": [1, 2, 3],
    },
    tuning_space={
        "BLOCK_N": [1024, 2048, 4096, 8192],
        "num_warps": [4, 8, 16],
        "ROWS_PER_PROGRAM": [1, 4],
        "NUM_STAGES": [1, 2],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=lambda d: 4.0 * d["tokens"] * d["hidden"],
    bytes_moved=lambda d, elt: (2.0 * d["tokens"] * d["hidden"] + d["hidden"]) * elt,
    bound="memory",
    shapes=[
        _shape("llama3-8b-decode-b1", 1, 4096, "Llama-3-8B", "decode"),
        _shape("llama3-8b-decode-b64", 64, 4096, "Llama-3-8B", "decode"),
        _shape("llama3-8b-prefill-b4-s4096", 16384, 4096, "Llama-3-8B", "prefill"),
        _shape("qwen2.5-14b-prefill-s8192", 8192, 5120, "Qwen2.5-14B", "prefill"),
        _shape("llama3-70b-decode-b64", 64, 8192, "Llama-3-70B", "decode"),
        _shape("llama3-70b-prefill-b4-s16384", 65536, 8192, "Llama-3-70B", "prefill"),
    ],
    small_shapes=[
        ShapeCase("tiny-3x96", {"tokens": 3, "hidden": 96}),
        ShapeCase("tiny-4x300", {"tokens": 4, "hidden": 300}),
    ],
    forbidden_ops=frozenset({"rsqrt", "_fused_rms_norm", "rms_norm", "pow", "mean"}),
)
