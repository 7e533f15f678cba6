"""Fused attention forward: O = softmax(Q K^T * scale [+ causal mask]) V, one pass.

Template (flash-attention style): one program per BLOCK_M query rows of one (batch, head);
it streams K and V in BLOCK_N blocks, keeping a running row max and sum so the S x S score
matrix never leaves the chip. Causal runs split the key range into the blocks left of the
diagonal (no mask) and the diagonal blocks (masked). LOAD picks pointer loads or TMA
descriptors (Hopper's tensor-memory accelerator) for Q, K, V and O; ORDER "heavy_first"
launches the causal query blocks that see the most keys first, shortening the tail.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tunemem.kernels.tasks.base import (
    MAX_ACCUMULATORS_PER_THREAD,
    SHARED_MEMORY_LIMIT_BYTES,
    ConfigViolation,
    KernelTask,
    ShapeCase,
    random_normal,
)


@triton.jit
def _attention_key_blocks(
    acc,
    row_sum,
    row_max,
    q,
    k_src,
    v_src,
    stride_kn,
    stride_vn,
    kv_row,
    start_m,
    qk_scale,
    seq_len,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    PART: tl.constexpr,
    USE_TMA: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    # PART 1: keys left of the diagonal block; 2: the diagonal block; 3: all keys.
    # With USE_TMA, k_src/v_src are descriptors over (batch*heads*seq, HEAD_DIM) rows starting
    # at kv_row; otherwise they are base pointers of this (batch, head).
    if PART == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif PART == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, seq_len
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        if USE_TMA:
            k = k_src.load([kv_row + start_n, 0]).T
        else:
            k = tl.load(k_src + keys[None, :].to(tl.int64) * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k)
        if PART == 2:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= keys[None, :], 0.0, -1.0e6)
            new_max = tl.maximum(row_max, tl.max(qk, 1))
            qk -= new_max[:, None]
        else:
            new_max = tl.maximum(row_max, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - new_max[:, None]
        p = tl.math.exp2(qk)
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        acc = acc * rescale[:, None]
        if USE_TMA:
            v = v_src.load([kv_row + start_n, 0])
        else:
            v = tl.load(v_src + keys[:, None].to(tl.int64) * stride_vn + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        row_max = new_max
    return acc, row_sum, row_max


@triton.jit
def attention_fwd_kernel(
    q_src,
    k_src,
    v_src,
    o_src,
    sm_scale,
    stride_qz,
    stride_qh,
    stride_qm,
    stride_kz,
    stride_kh,
    stride_kn,
    stride_vz,
    stride_vh,
    stride_vn,
    stride_oz,
    stride_oh,
    stride_om,
    heads,
    seq_len,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    USE_TMA: tl.constexpr,
    HEAVY_FIRST: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    if HEAVY_FIRST:  # causal: the last query blocks see the most keys, so start them first
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    kv_row = off_hz * seq_len
    q_row = kv_row + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    if USE_TMA:
        q = q_src.load([q_row, 0])
        k_base = k_src
        v_base = v_src
    else:
        off_z = (off_hz // heads).to(tl.int64)
        off_h = (off_hz % heads).to(tl.int64)
        q_base = q_src + off_z * stride_qz + off_h * stride_qh
        k_base = k_src + off_z * stride_kz + off_h * stride_kh
        v_base = v_src + off_z * stride_vz + off_h * stride_vh
        q = tl.load(q_base + offs_m[:, None].to(tl.int64) * stride_qm + offs_d[None, :])
    row_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        acc, row_sum, row_max = _attention_key_blocks(
            acc,
            row_sum,
            row_max,
            q,
            k_base,
            v_base,
            stride_kn,
            stride_vn,
            kv_row,
            start_m,
            qk_scale,
            seq_len,
            BLOCK_M,
            BLOCK_N,
            HEAD_DIM,
            1,
            USE_TMA,
            NUM_STAGES,
        )
        acc, row_sum, row_max = _attention_key_blocks(
            acc,
            row_sum,
            row_max,
            q,
            k_base,
            v_base,
            stride_kn,
            stride_vn,
            kv_row,
            start_m,
            qk_scale,
            seq_len,
            BLOCK_M,
            BLOCK_N,
            HEAD_DIM,
            2,
            USE_TMA,
            NUM_STAGES,
        )
    else:
        acc, row_sum, row_max = _attention_key_blocks(
            acc,
            row_sum,
            row_max,
            q,
            k_base,
            v_base,
            stride_kn,
            stride_vn,
            kv_row,
            start_m,
            qk_scale,
            seq_len,
            BLOCK_M,
            BLOCK_N,
            HEAD_DIM,
            3,
            USE_TMA,
            NUM_STAGES,
        )
    out = acc / row_sum[:, None]
    if USE_TMA:
        o_src.store([q_row, 0], out.to(o_src.dtype))
    else:
        off_z = (off_hz // heads).to(tl.int64)
        off_h = (off_hz % heads).to(tl.int64)
        o_base = o_src + off_z * stride_oz + off_h * stride_oh
        o_ptrs = o_base + offs_m[:, None].to(tl.int64) * stride_om + offs_d[None, :]
        tl.store(o_ptrs, out.to(o_src.dtype.element_ty))


def _is_causal(causal: torch.Tensor) -> bool:
    return bool(causal.shape[0])


def _row_descriptor(t: torch.Tensor, rows: int) -> TensorDescriptor:
    """A TMA descriptor over a contiguous (batch, heads, seq, dim) tensor seen as 2-D rows."""
    return TensorDescriptor.from_tensor(t.view(-1, t.shape[-1]), [rows, t.shape[-1]])


def launch(
    config: dict[str, Any], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: torch.Tensor
) -> torch.Tensor:
    """Run the attention template with one configuration; returns a new tensor.

    `causal` is a length-0 (full) or length-1 (causal) marker tensor, so that every task's
    inputs are tensors only.
    """
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    use_tma = config["LOAD"] == "tma"
    if use_tma:
        sources = (
            _row_descriptor(q, bm),
            _row_descriptor(k, bn),
            _row_descriptor(v, bn),
            _row_descriptor(out, bm),
        )
    else:
        sources = (q, k, v, out)
    attention_fwd_kernel[(triton.cdiv(seq_len, bm), batch * heads)](
        *sources,
        1.0 / math.sqrt(head_dim),
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        heads,
        seq_len,
        HEAD_DIM=head_dim,
        BLOCK_M=bm,
        BLOCK_N=bn,
        CAUSAL=_is_causal(causal),
        USE_TMA=use_tma,
        HEAVY_FIRST=config["ORDER"] == "heavy_first",
        NUM_STAGES=config["num_stages"],
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    return out


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    """Blocks must tile the sequence, nest on the diagonal and fit the chip."""
    bm, bn, seq = config["BLOCK_M"], config["BLOCK_N"], dims["seq"]
    if seq % bm or seq % bn:
        return ConfigViolation("other", f"sequence {seq} not a multiple of the blocks")
    if config["ORDER"] == "heavy_first" and not dims["causal"]:
        return ConfigViolation("other", "block order only matters for causal attention")
    if dims["causal"] and bm % bn:
        return ConfigViolation("other", "causal needs BLOCK_M a multiple of BLOCK_N")
    d = dims["head_dim"]
    smem = 2 * (bm * d + config["num_stages"] * 2 * bn * d)
    if smem > SHARED_MEMORY_LIMIT_BYTES:
        return ConfigViolation("resources", f"needs {smem} B of shared memory")
    per_thread = bm * (d + bn) / (32 * config["num_warps"])
    if per_thread > MAX_ACCUMULATORS_PER_THREAD:
        return ConfigViolation("resources", f"{per_thread:.0f} live values per thread spill")
    return None


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    shape = (dims["batch"], dims["heads"], dims["seq"], dims["head_dim"])
    q = random_normal(shape, dtype, device, seed)
    k = random_normal(shape, dtype, device, seed + 15485863)
    v = random_normal(shape, dtype, device, seed + 32452843)
    causal = torch.zeros((1 if dims["causal"] else 0,), device=device)
    return q, k, v, causal


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: torch.Tensor):
    return F.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), is_causal=_is_causal(causal)
    )


def torch_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: torch.Tensor):
    return F.scaled_dot_product_attention(q, k, v, is_causal=_is_causal(causal))


def _flops(d: dict[str, int]) -> float:
    full = 4.0 * d["batch"] * d["heads"] * d["seq"] * d["seq"] * d["head_dim"]
    return full / 2 if d["causal"] else full


def _shape(name: str, batch: int, heads: int, seq: int, causal: bool, model: str | None = None):
    dims = {"batch": batch, "heads": heads, "seq": seq, "head_dim": 128, "causal": int(causal)}
    return ShapeCase(name, dims, model, "prefill")


TASK = KernelTask(
    name="attention",
    op="attention",
    kernel="attention_fwd_kernel",
    description="fused multi-head attention forward (flash style), causal or not",
    parameter_space={
        "BLOCK_M": [16, 32, 64, 128, 256],
        "BLOCK_N": [16, 32, 64, 128, 256],
        "num_warps": [2, 4, 8],
        "num_stages": [1, 2, 3, 4],
        "LOAD": ["pointer", "tma"],
        "ORDER": ["ascending", "heavy_first"],
    },
    tuning_space={
        "BLOCK_M": [64, 128],
        "BLOCK_N": [32, 64, 128],
        "num_warps": [4, 8],
        "num_stages": [2, 3, 4],
        "LOAD": ["pointer", "tma"],
        "ORDER": ["ascending", "heavy_first"],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=_flops,
    bytes_moved=lambda d, elt: 4.0 * d["batch"] * d["heads"] * d["seq"] * d["head_dim"] * elt,
    bound="compute",
    shapes=[
        _shape("llama2-7b-prefill-b4-s4096", 4, 32, 4096, False, "Llama-2-7B"),
        _shape("llama2-7b-prefill-b4-s4096-causal", 4, 32, 4096, True, "Llama-2-7B"),
        _shape("llama2-7b-prefill-b16-s1024-causal", 16, 32, 1024, True, "Llama-2-7B"),
        _shape("h32-prefill-b2-s8192-causal", 2, 32, 8192, True),
        _shape("h32-prefill-b1-s16384-causal", 1, 32, 16384, True),
        _shape("h64-prefill-b1-s16384-causal", 1, 64, 16384, True),
    ],
    small_shapes=[
        ShapeCase(
            "tiny-b1-h2-s64-d32", {"batch": 1, "heads": 2, "seq": 64, "head_dim": 32, "causal": 0}
        ),
        ShapeCase(
            "tiny-b2-h1-s64-d32-causal",
            {"batch": 2, "heads": 1, "seq": 64, "head_dim": 32, "causal": 1},
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
        }
    ),
)
