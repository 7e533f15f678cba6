"""The fused-MoE layer's Triton kernels and their launch: routing alignment, the grouped GEMM
(one compiled kernel per launch configuration serves both projections and every batch size:
batch size, top-k and the routed-weight switch are runtime arguments), SiLU-and-multiply and
the top-k sum. `kernels.tasks.fused_moe` (bf16) and `kernels.tasks.fused_moe_fp8` declare the
tasks on top of `fused_experts`.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

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
