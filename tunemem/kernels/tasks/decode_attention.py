"""Decode attention: one new query token per sequence against a long KV cache (flash-decoding).

O[b, h] = softmax(q[b, h] K[b, g(h)]^T * scale) V[b, g(h)], with q of shape (batch, heads, 1,
head_dim) and K, V of shape (batch, kv_heads, kv_len, head_dim); query heads share KV heads in
groups of heads / kv_heads (grouped-query attention, as Llama-3 does).

Template: the KV sequence is split into SPLITS chunks. One program per (batch, KV head, chunk)
loads the group's query heads as one tile (padded to 16 rows so `tl.dot` runs on the tensor
cores), streams its chunk in BLOCK_N blocks with a running max and sum, and writes a partial
output and its log-sum-exp; a second small kernel combines the chunks of each head. With one
query per sequence there is little work per (batch, head), so SPLITS is what fills the chip.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tunemem.kernels.tasks.base import (
    MAX_ACCUMULATORS_PER_THREAD,
    SHARED_MEMORY_LIMIT_BYTES,
    ConfigViolation,
    KernelTask,
    ShapeCase,
    next_power_of_2,
    random_normal,
)


@triton.jit
def decode_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    part_o_ptr,
    part_lse_ptr,
    sm_scale,
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    heads,
    kv_heads,
    chunk,
    GROUP: tl.constexpr,
    BLOCK_H: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SPLITS: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    b = (pid // kv_heads).to(tl.int64)
    kvh = (pid % kv_heads).to(tl.int64)
    offs_h = tl.arange(0, BLOCK_H)
    in_group = offs_h < GROUP
    q_heads = kvh * GROUP + offs_h
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + b * stride_qb + q_heads[:, None] * stride_qh + offs_d[None, :],
        mask=in_group[:, None],
        other=0.0,
    )
    k_base = k_ptr + b * stride_kb + kvh * stride_kh
    v_base = v_ptr + b * stride_vb + kvh * stride_vh
    row_max = tl.full([BLOCK_H], -float("inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    lo = split * chunk
    for start in tl.range(lo, lo + chunk, BLOCK_N, num_stages=NUM_STAGES):
        keys = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        k = tl.load(k_base + keys[None, :] * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        new_max = tl.maximum(row_max, tl.max(qk, 1))
        p = tl.math.exp2(qk - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        acc = acc * rescale[:, None]
        v = tl.load(v_base + keys[:, None] * stride_vn + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        row_max = new_max
    slot = (b * heads + q_heads) * SPLITS + split
    tl.store(
        part_o_ptr + slot[:, None] * HEAD_DIM + offs_d[None, :],
        acc / row_sum[:, None],
        mask=in_group[:, None],
    )
    tl.store(part_lse_ptr + slot, row_max + tl.math.log2(row_sum), mask=in_group)


@triton.jit
def decode_attention_combine_kernel(
    part_o_ptr,
    part_lse_ptr,
    o_ptr,
    stride_ob,
    stride_oh,
    heads,
    SPLITS: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    pid = tl.program_id(0)
    b = (pid // heads).to(tl.int64)
    h = (pid % heads).to(tl.int64)
    offs_s = tl.arange(0, SPLITS)
    offs_d = tl.arange(0, HEAD_DIM)
    lse = tl.load(part_lse_ptr + pid.to(tl.int64) * SPLITS + offs_s)
    weight = tl.math.exp2(lse - tl.max(lse, 0))
    weight = weight / tl.sum(weight, 0)
    part = tl.load(
        part_o_ptr + (pid.to(tl.int64) * SPLITS + offs_s[:, None]) * HEAD_DIM + offs_d[None, :]
    )
    out = tl.sum(part * weight[:, None], 0)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))


def block_heads(group: int) -> int:
    """Rows of the query tile: the group's heads, padded to the 16 rows `tl.dot` needs."""
    return max(16, next_power_of_2(group))


def launch(
    config: dict[str, Any], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """Run the split-KV decode template with one configuration; returns a new tensor."""
    batch, heads, _, head_dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    splits = config["SPLITS"]
    group = heads // kv_heads
    out = torch.empty_like(q)
    part_o = torch.empty((batch, heads, splits, head_dim), device=q.device, dtype=torch.float32)
    part_lse = torch.empty((batch, heads, splits), device=q.device, dtype=torch.float32)
    decode_attention_kernel[(batch * kv_heads, splits)](
        q,
        k,
        v,
        part_o,
        part_lse,
        1.0 / math.sqrt(head_dim),
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        heads,
        kv_heads,
        kv_len // splits,
        GROUP=group,
        BLOCK_H=block_heads(group),
        HEAD_DIM=head_dim,
        BLOCK_N=config["BLOCK_N"],
        SPLITS=splits,
        NUM_STAGES=config["num_stages"],
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    decode_attention_combine_kernel[(batch * heads,)](
        part_o,
        part_lse,
        out,
        out.stride(0),
        out.stride(1),
        heads,
        SPLITS=splits,
        HEAD_DIM=head_dim,
        num_warps=4,
    )
    return out


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    """Chunks must tile the KV sequence in whole blocks and the tiles must fit the chip."""
    bn, splits, kv_len = config["BLOCK_N"], config["SPLITS"], dims["kv_len"]
    if kv_len % (splits * bn):
        return ConfigViolation("other", f"kv_len {kv_len} not a multiple of SPLITS x BLOCK_N")
    if dims["heads"] % dims["kv_heads"]:
        return ConfigViolation("other", "heads not a multiple of kv_heads")
    d = dims["head_dim"]
    rows = block_heads(dims["heads"] // dims["kv_heads"])
    smem = 2 * (rows * d + config["num_stages"] * 2 * bn * d)
    if smem > SHARED_MEMORY_LIMIT_BYTES:
        return ConfigViolation("resources", f"needs {smem} B of shared memory")
    per_thread = rows * (d + bn) / (32 * config["num_warps"])
    if per_thread > MAX_ACCUMULATORS_PER_THREAD:
        return ConfigViolation("resources", f"{per_thread:.0f} live values per thread spill")
    return None


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    batch, d = dims["batch"], dims["head_dim"]
    q = random_normal((batch, dims["heads"], 1, d), dtype, device, seed)
    kv_shape = (batch, dims["kv_heads"], dims["kv_len"], d)
    k = random_normal(kv_shape, dtype, device, seed + 15485863)
    v = random_normal(kv_shape, dtype, device, seed + 32452843)
    return q, k, v


def _expand(t: torch.Tensor, heads: int) -> torch.Tensor:
    return t.repeat_interleave(heads // t.shape[1], dim=1)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    heads = q.shape[1]
    return F.scaled_dot_product_attention(
        q.float(), _expand(k.float(), heads), _expand(v.float(), heads)
    )


def torch_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=q.shape[1] != k.shape[1])


def _bytes(d: dict[str, int], elt: int) -> float:
    kv = 2.0 * d["batch"] * d["kv_heads"] * d["kv_len"] * d["head_dim"]
    return (kv + 2.0 * d["batch"] * d["heads"] * d["head_dim"]) * elt


def _shape(name: str, batch: int, heads: int, kv_heads: int, kv_len: int, model: str):
    dims = {
        "batch": batch,
        "heads": heads,
        "kv_heads": kv_heads,
        "kv_len": kv_len,
        "head_dim": 128,
    }
    return ShapeCase(name, dims, model, "decode")


TASK = KernelTask(
    name="decode_attention",
    op="attention",
    kernel="decode_attention_kernel",
    description="decode attention: one query per sequence over a long KV cache (split-KV, GQA)",
    parameter_space={
        "BLOCK_N": [16, 32, 64, 128, 256],
        "SPLITS": [1, 2, 4, 8, 16, 32, 64],
        "num_warps": [1, 2, 4, 8],
        "num_stages": [1, 2, 3, 4],
    },
    tuning_space={
        "BLOCK_N": [32, 64, 128],
        "SPLITS": [2, 4, 8, 16, 32],
        "num_warps": [2, 4, 8],
        "num_stages": [2, 3],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=lambda d: 4.0 * d["batch"] * d["heads"] * d["kv_len"] * d["head_dim"],
    bytes_moved=_bytes,
    bound="memory",
    shapes=[
        _shape("llama3-8b-decode-b1-kv32768", 1, 32, 8, 32768, "Llama-3-8B"),
        _shape("llama3-8b-decode-b8-kv8192", 8, 32, 8, 8192, "Llama-3-8B"),
        _shape("llama3-8b-decode-b32-kv4096", 32, 32, 8, 4096, "Llama-3-8B"),
        _shape("llama3-8b-decode-b64-kv2048", 64, 32, 8, 2048, "Llama-3-8B"),
        _shape("llama3-70b-decode-b8-kv8192", 8, 64, 8, 8192, "Llama-3-70B"),
        _shape("llama2-7b-decode-b16-kv4096", 16, 32, 32, 4096, "Llama-2-7B"),
    ],
    small_shapes=[
        ShapeCase(
            "tiny-b1-h4-kv2-n64-d16",
            {"batch": 1, "heads": 4, "kv_heads": 2, "kv_len": 64, "head_dim": 16},
        ),
        ShapeCase(
            "tiny-b2-h2-kv2-n128-d16",
            {"batch": 2, "heads": 2, "kv_heads": 2, "kv_len": 128, "head_dim": 16},
        ),
    ],
    forbidden_ops=frozenset(
        {
            "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_efficient_attention",
            "_scaled_dot_product_cudnn_attention",
            "_scaled_dot_product_flash_attention_for_cpu",
            "scaled_dot_product_attention",
            "_flash_attention_forward",
            "_efficient_attention_forward",
            "bmm",
            "mm",
            "matmul",
            "baddbmm",
            "_softmax",
            "einsum",
            "repeat_interleave",
        }
    ),
)
