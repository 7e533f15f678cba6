"""Fused mixture-of-experts layer (bf16): out = sum_j w_j * down_e(silu(gate_e(x)) * up_e(x)).

Each token goes to its top-k of E experts (`topk_ids`, weights `topk_weights`). The token
copies are sorted by expert and each expert's run padded to a multiple of BLOCK_SIZE_M
(`align_block_size`), so one program's BLOCK_SIZE_M rows all use one expert's weights; then
one grouped GEMM per projection: x @ w1[e]^T (gate and up, [E, 2N, K]), SiLU-and-multiply,
act @ w2[e]^T scaled by the routing weight ([E, K, N]), and the top-k copies summed per token.
The launch parameters are vLLM's (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages;
`kernels.moe_space`), so vLLM's tuned files and this kernel speak the same language. The batch
size, top-k and the routed-weight switch are runtime arguments, so one compiled kernel per
configuration serves both GEMMs and every batch size. fp8 (w8a8, per-tensor activation and
per-expert weight scales) is `kernels.tasks.fused_moe_fp8`, on the same kernel.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from kernels.tasks.base import (
    SHARED_MEMORY_LIMIT_BYTES,
    ConfigViolation,
    KernelTask,
    ShapeCase,
    Tolerance,
    random_normal,
)

FP8_MAX = 448.0  # largest finite float8_e4m3fn


@triton.jit(do_not_specialize=["EM", "num_valid_tokens", "top_k", "mul_routed_weight"])
def fused_moe_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    topk_weights_ptr,
    sorted_token_ids_ptr,
    expert_ids_ptr,
    num_tokens_post_padded_ptr,
    N,
    K,
    EM,
    num_valid_tokens,
    top_k,
    mul_routed_weight,
    stride_am,
    stride_ak,
    stride_be,
    stride_bn,
    stride_bk,
    stride_cm,
    stride_cn,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    USE_FP8: tl.constexpr,
):
    # Grouped tile order (GROUP_SIZE_M row blocks per column sweep) so neighbours share L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    if pid_m * BLOCK_SIZE_M >= tl.load(num_tokens_post_padded_ptr):
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id).to(tl.int64)
    token_mask = offs_token < num_valid_tokens  # padding slots hold num_valid_tokens
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_token[:, None] // top_k) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + expert * stride_be + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if USE_FP8:
        acc = acc * (tl.load(a_scale_ptr) * tl.load(b_scale_ptr + expert))
    if mul_routed_weight:
        routed = tl.load(topk_weights_ptr + offs_token, mask=token_mask, other=0.0)
        acc = acc * routed[:, None]
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + offs_token[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@triton.jit
def silu_and_mul_kernel(
    h_ptr, out_ptr, scale_ptr, N, stride_h, stride_out, BLOCK: tl.constexpr, QUANT: tl.constexpr
):
    # out = silu(gate) * up of one row block; QUANT divides by the static scale for fp8.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    gate = tl.load(h_ptr + row * stride_h + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(h_ptr + row * stride_h + N + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    if QUANT:
        y = tl.clamp(y / tl.load(scale_ptr), -448.0, 448.0)
    tl.store(out_ptr + row * stride_out + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def moe_sum_kernel(y_ptr, out_ptr, K, top_k, BLOCK: tl.constexpr):
    # out[m] = sum over the token's top_k expert outputs (rows m * top_k + j of y).
    m = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < K
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for j in range(0, top_k):
        acc += tl.load(y_ptr + (m * top_k + j) * K + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + m * K + cols, acc.to(out_ptr.dtype.element_ty), mask=mask)


def align_block_size(
    topk_ids: torch.Tensor, block_m: int, experts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token copies sorted by expert, each expert's run padded to a multiple of `block_m`.

    Returns (sorted_token_ids, expert_ids, num_tokens_post_padded): flat copy indices
    (m * top_k + j; padding slots hold M * top_k), the expert of each BLOCK_SIZE_M block, and
    the padded total as a one-element tensor. Sizes depend on shapes only and nothing is read
    back to the host, so the whole call can be captured in a CUDA graph.
    """
    if block_m & (block_m - 1):
        raise ValueError(f"BLOCK_SIZE_M must be a power of two, not {block_m}")
    flat = topk_ids.reshape(-1).to(torch.int64)
    total = flat.numel()
    capacity = total + experts * (block_m - 1)
    counts = torch.zeros(experts, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    padded = torch.bitwise_and(counts + (block_m - 1), -block_m)
    ends = torch.cumsum(padded, 0)
    raw_starts = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)
    by_expert = flat[order]
    rank = torch.arange(total, device=flat.device) - raw_starts[by_expert]
    sorted_ids = torch.full((capacity,), total, dtype=torch.int32, device=flat.device)
    sorted_ids[(ends - padded)[by_expert] + rank] = order.to(torch.int32)
    block_starts = torch.arange(0, capacity, block_m, device=flat.device)
    expert_ids = torch.searchsorted(ends, block_starts, right=True).clamp_(max=experts - 1)
    return sorted_ids, expert_ids.to(torch.int32), ends[-1:].to(torch.int32)


def _grouped_gemm(
    config: dict[str, Any],
    a: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    routing: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    topk_weights: torch.Tensor,
    top_k: int,
    mul_routed_weight: bool,
    scales: tuple[torch.Tensor, torch.Tensor] | None,
) -> None:
    sorted_ids, expert_ids, num_post = routing
    n, k = w.shape[1], w.shape[2]
    bm, bn = config["BLOCK_SIZE_M"], config["BLOCK_SIZE_N"]
    grid = (triton.cdiv(sorted_ids.numel(), bm) * triton.cdiv(n, bn),)
    a_scale, b_scale = scales if scales is not None else (topk_weights, topk_weights)
    fused_moe_kernel[grid](
        a,
        w,
        out,
        a_scale,
        b_scale,
        topk_weights,
        sorted_ids,
        expert_ids,
        num_post,
        n,
        k,
        sorted_ids.numel(),
        topk_weights.numel(),
        top_k,
        int(mul_routed_weight),
        a.stride(0),
        a.stride(1),
        w.stride(0),
        w.stride(1),
        w.stride(2),
        out.stride(0),
        out.stride(1),
        BLOCK_SIZE_M=bm,
        BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=config["BLOCK_SIZE_K"],
        GROUP_SIZE_M=config["GROUP_SIZE_M"],
        USE_FP8=scales is not None,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )


ELEMENTWISE_BLOCK = 1024


def fused_experts(
    config: dict[str, Any],
    x: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    fp8_scales: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """The MoE layer with one launch configuration for both GEMMs, as vLLM applies it.

    `fp8_scales` = (a1_scale, w1_scale, a2_scale, w2_scale) when x, w1, w2 are float8_e4m3fn
    (activation scales one-element, weight scales one per expert); the output is bf16.
    """
    m, hidden = x.shape
    experts, two_n, _ = w1.shape
    top_k = topk_ids.shape[1]
    copies = m * top_k
    out_dtype = torch.bfloat16 if fp8_scales is not None else x.dtype
    weights = topk_weights.reshape(-1).to(torch.float32)
    routing = align_block_size(topk_ids, config["BLOCK_SIZE_M"], experts)
    h = torch.empty((copies, two_n), device=x.device, dtype=out_dtype)
    first = (fp8_scales[0], fp8_scales[1]) if fp8_scales is not None else None
    _grouped_gemm(config, x, w1, h, routing, weights, top_k, False, first)
    n = two_n // 2
    act = torch.empty((copies, n), device=x.device, dtype=w2.dtype)
    quant_scale = fp8_scales[2] if fp8_scales is not None else weights
    grid = (copies, triton.cdiv(n, ELEMENTWISE_BLOCK))
    silu_and_mul_kernel[grid](
        h,
        act,
        quant_scale,
        n,
        h.stride(0),
        act.stride(0),
        BLOCK=ELEMENTWISE_BLOCK,
        QUANT=fp8_scales is not None,
    )
    y = torch.empty((copies, hidden), device=x.device, dtype=out_dtype)
    second = (fp8_scales[2], fp8_scales[3]) if fp8_scales is not None else None
    _grouped_gemm(config, act, w2, y, routing, weights, 1, True, second)
    out = torch.empty((m, hidden), device=x.device, dtype=out_dtype)
    moe_sum_kernel[(m, triton.cdiv(hidden, ELEMENTWISE_BLOCK))](
        y, out, hidden, top_k, BLOCK=ELEMENTWISE_BLOCK
    )
    return out


def launch(
    config: dict[str, Any],
    x: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
) -> torch.Tensor:
    """Run the bf16 layer with one configuration; returns a new tensor."""
    return fused_experts(config, x, w1, w2, topk_weights, topk_ids)


def route(
    m: int, experts: int, top_k: int, device: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random router logits turned into top-k experts and renormalised softmax weights."""
    logits = random_normal((m, experts), torch.float32, device, seed)
    probs = torch.softmax(logits, dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    return weights / weights.sum(dim=-1, keepdim=True), ids.to(torch.int32)


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    """x [M, K], w1 [E, 2N, K], w2 [E, K, N] (scaled so activations stay near 1), routing."""
    m, experts, n, hidden, top_k = dims["M"], dims["E"], dims["N"], dims["K"], dims["topk"]
    x = random_normal((m, hidden), dtype, device, seed)
    w1 = (random_normal((experts, 2 * n, hidden), torch.float32, device, seed + 7919)) * (
        hidden**-0.5
    )
    w2 = (random_normal((experts, hidden, n), torch.float32, device, seed + 104729)) * (n**-0.5)
    weights, ids = route(m, experts, top_k, device, seed + 31)
    return x, w1.to(dtype), w2.to(dtype), weights, ids


def reference(
    x: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
) -> torch.Tensor:
    """float32 ground truth, token copy by copy through each chosen expert."""
    xf, w1f, w2f = x.float(), w1.float(), w2.float()
    n = w2.shape[2]
    out = torch.zeros((x.shape[0], w2.shape[1]), dtype=torch.float32, device=x.device)
    for e in torch.unique(topk_ids).tolist():
        rows, slots = torch.nonzero(topk_ids == e, as_tuple=True)
        h = xf[rows] @ w1f[e].T
        act = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
        out.index_add_(0, rows, (act @ w2f[e].T) * topk_weights[rows, slots, None].float())
    return out


def torch_op(
    x: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
) -> torch.Tensor:
    """PyTorch eager in the input dtype: the same loop over experts."""
    n = w2.shape[2]
    out = torch.zeros((x.shape[0], w2.shape[1]), dtype=x.dtype, device=x.device)
    for e in torch.unique(topk_ids).tolist():
        rows, slots = torch.nonzero(topk_ids == e, as_tuple=True)
        h = x[rows] @ w1[e].T
        act = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
        out.index_add_(0, rows, (act @ w2[e].T) * topk_weights[rows, slots, None].to(x.dtype))
    return out


def shared_memory_bytes(config: dict[str, Any], element_size: int = 2) -> int:
    """Shared memory of the pipelined A and B tiles (Triton keeps num_stages - 1 in flight
    plus the one being read, so num_stages copies)."""
    bm, bn, bk = config["BLOCK_SIZE_M"], config["BLOCK_SIZE_N"], config["BLOCK_SIZE_K"]
    return (bm * bk + bk * bn) * element_size * config["num_stages"]


def check_config(
    config: dict[str, Any], dims: dict[str, int], element_size: int = 2
) -> ConfigViolation | None:
    """Block sizes the kernel takes: powers of two, tiles within shared memory."""
    for name in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"):
        value = config[name]
        if value < 16 or value & (value - 1):
            return ConfigViolation("other", f"{name} must be a power of two >= 16, not {value}")
    if config["GROUP_SIZE_M"] < 1:
        return ConfigViolation("other", "GROUP_SIZE_M must be at least 1")
    smem = shared_memory_bytes(config, element_size)
    if smem > SHARED_MEMORY_LIMIT_BYTES:
        return ConfigViolation("resources", f"needs {smem} B of shared memory")
    return None


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    return check_config(config, dims, 2)


def flops(d: dict[str, int]) -> float:
    """Two GEMMs over the M * topk token copies: 2 * copies * (2N * K + K * N)."""
    return 2.0 * d["M"] * d["topk"] * 3 * d["N"] * d["K"]


def bytes_moved(d: dict[str, int], element_size: int) -> float:
    """Weights of the experts that can be touched (at most E, at most M * topk), x and out."""
    touched = min(d["E"], d["M"] * d["topk"])
    weights = touched * 3 * d["N"] * d["K"]
    return float(weights + 2 * d["M"] * d["K"]) * element_size


def moe_shape(name: str, m: int, e: int, n: int, k: int, top_k: int, model: str | None = None):
    return ShapeCase(name, {"M": m, "E": e, "N": n, "K": k, "topk": top_k}, model, "serving")


SMALL_SHAPES = [
    moe_shape("tiny-m5-e4-n32-k64-top2", 5, 4, 32, 64, 2),
    moe_shape("tiny-m19-e8-n48-k80-top3", 19, 8, 48, 80, 3),
]
GPU_SHAPES = [
    moe_shape("mixtral-8x7b-tp2-m64", 64, 8, 7168, 4096, 2, "Mixtral-8x7B"),
    moe_shape("qwen3-30b-a3b-m256", 256, 128, 768, 2048, 8, "Qwen3-30B-A3B"),
]
MOE_FORBIDDEN = frozenset({"mm", "addmm", "bmm", "matmul", "linear", "silu", "index_add"})

TASK = KernelTask(
    name="fused_moe",
    op="fused_moe",
    kernel="fused_moe_kernel",
    description="bf16 fused MoE layer: top-k routing, sorted and padded, one grouped GEMM each",
    parameter_space={
        "BLOCK_SIZE_M": [16, 32, 64, 128, 256],
        "BLOCK_SIZE_N": [32, 64, 128, 256],
        "BLOCK_SIZE_K": [64, 128, 256],
        "GROUP_SIZE_M": [1, 16, 32, 64],
        "num_warps": [4, 8],
        "num_stages": [2, 3, 4, 5],
    },
    tuning_space={
        "BLOCK_SIZE_M": [16, 64, 128],
        "BLOCK_SIZE_N": [64, 128],
        "BLOCK_SIZE_K": [64, 128],
        "GROUP_SIZE_M": [1, 16],
        "num_warps": [4, 8],
        "num_stages": [3, 4],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=flops,
    bytes_moved=bytes_moved,
    bound="compute",
    shapes=GPU_SHAPES,
    small_shapes=SMALL_SHAPES,
    forbidden_ops=MOE_FORBIDDEN,
    tolerances={
        "bfloat16": Tolerance(atol=3e-2, rtol=3e-2, rel_norm=1.5e-2),
        "float16": Tolerance(atol=1e-2, rtol=1e-2, rel_norm=5e-3),
        "float32": Tolerance(atol=1e-3, rtol=1e-3, rel_norm=1e-3),
    },
)
