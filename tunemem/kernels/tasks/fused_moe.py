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

from tunemem.kernels.tasks.base import (
    SHARED_MEMORY_LIMIT_BYTES,
    ConfigViolation,
    KernelTask,
    ShapeCase,
    Tolerance,
    random_normal,
)
from tunemem.kernels.tasks.fused_moe_kernels import FP8_MAX, fused_experts, fused_moe_kernel

__all__ = ["FP8_MAX", "TASK", "fused_experts", "fused_moe_kernel"]


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
