"""Fused MoE layer with fp8 weights and activations (vLLM's `dtype=fp8_w8a8`, per-tensor scales).

x, w1 and w2 are float8_e4m3fn with a per-tensor activation scale and one scale per expert for
each weight; the activation between the GEMMs is quantised with a static scale (calibrated
when the inputs are drawn, as a checkpoint's static scales are). Same kernel and launch
parameters as `kernels.tasks.fused_moe`; the output is bf16. Needs a GPU with fp8 matrix units
(compute capability 8.9 or newer); the interpreter has no fp8 dot.
"""

from __future__ import annotations

from typing import Any

import torch

from tunemem.kernels.tasks.base import ConfigViolation, KernelTask, Tolerance, random_normal
from tunemem.kernels.tasks.fused_moe import (
    FP8_MAX,
    MOE_FORBIDDEN,
    check_config,
    fused_experts,
    moe_shape,
    route,
)
from tunemem.kernels.tasks.fused_moe import (
    TASK as BF16_TASK,
)

FP8 = torch.float8_e4m3fn


def quantise(t: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """t / scale, clamped to fp8's range, as float8_e4m3fn (scale broadcasts)."""
    return (t / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)


def per_expert_scale(w: torch.Tensor) -> torch.Tensor:
    return w.abs().amax(dim=(1, 2)).clamp(min=1e-12) / FP8_MAX


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    """Quantised x, w1, w2 with their scales; a2_scale from the float32 activations' maximum."""
    m, experts, n, hidden, top_k = dims["M"], dims["E"], dims["N"], dims["K"], dims["topk"]
    x = random_normal((m, hidden), torch.float32, device, seed)
    w1 = random_normal((experts, 2 * n, hidden), torch.float32, device, seed + 7919) * hidden**-0.5
    w2 = random_normal((experts, hidden, n), torch.float32, device, seed + 104729) * n**-0.5
    weights, ids = route(m, experts, top_k, device, seed + 31)
    a1 = (x.abs().amax().clamp(min=1e-12) / FP8_MAX).reshape(1)
    w1s, w2s = per_expert_scale(w1), per_expert_scale(w2)
    xq, w1q, w2q = (
        quantise(x, a1),
        quantise(w1, w1s[:, None, None]),
        quantise(w2, w2s[:, None, None]),
    )
    peak = torch.zeros((), device=device)
    for e in torch.unique(ids).tolist():
        rows = torch.nonzero(ids == e, as_tuple=True)[0]
        h = (xq[rows].float() * a1) @ (w1q[e].float() * w1s[e]).T
        act = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
        peak = torch.maximum(peak, act.abs().amax())
    a2 = (peak.clamp(min=1e-12) / FP8_MAX).reshape(1)
    return xq, w1q, w2q, weights, ids, a1, w1s, a2, w2s


def reference(x, w1, w2, topk_weights, topk_ids, a1, w1s, a2, w2s) -> torch.Tensor:
    """float32 ground truth of the w8a8 layer: dequantised inputs, the activation quantised
    with a2 exactly as the kernel does, everything else in float32."""
    n = w2.shape[2]
    xf = x.float() * a1
    out = torch.zeros((x.shape[0], w2.shape[1]), dtype=torch.float32, device=x.device)
    for e in torch.unique(topk_ids).tolist():
        rows, slots = torch.nonzero(topk_ids == e, as_tuple=True)
        h = xf[rows] @ (w1[e].float() * w1s[e]).T
        h = h.to(torch.bfloat16).float()  # the kernel keeps the first GEMM's output in bf16
        act = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
        act = quantise(act, a2).float() * a2
        y = act @ (w2[e].float() * w2s[e]).T
        out.index_add_(0, rows, y * topk_weights[rows, slots, None].float())
    return out


def torch_op(x, w1, w2, topk_weights, topk_ids, a1, w1s, a2, w2s) -> torch.Tensor:
    """PyTorch eager: dequantise to bf16 and run the bf16 expert loop."""
    bf = torch.bfloat16
    return BF16_TASK.torch_op(
        (x.float() * a1).to(bf),
        (w1.float() * w1s[:, None, None]).to(bf),
        (w2.float() * w2s[:, None, None]).to(bf),
        topk_weights,
        topk_ids,
    )


def launch(config: dict[str, Any], x, w1, w2, topk_weights, topk_ids, a1, w1s, a2, w2s):
    """Run the fp8 layer with one configuration; returns a new bf16 tensor."""
    return fused_experts(config, x, w1, w2, topk_weights, topk_ids, (a1, w1s, a2, w2s))


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    return check_config(config, dims, 1)


def bytes_moved(d: dict[str, int], element_size: int) -> float:
    touched = min(d["E"], d["M"] * d["topk"])
    return float(touched * 3 * d["N"] * d["K"] + d["M"] * d["K"]) + 2.0 * d["M"] * d["K"]


TASK = KernelTask(
    name="fused_moe_fp8",
    op="fused_moe",
    kernel="fused_moe_kernel",
    description="fp8 (w8a8) fused MoE layer, per-tensor activation and per-expert weight scales",
    parameter_space=dict(BF16_TASK.parameter_space),
    tuning_space=dict(BF16_TASK.tuning_space),
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=BF16_TASK.flops,
    bytes_moved=bytes_moved,
    bound="compute",
    shapes=[moe_shape("mixtral-8x7b-tp1-fp8-m64", 64, 8, 14336, 4096, 2, "Mixtral-8x7B")],
    small_shapes=[],
    forbidden_ops=MOE_FORBIDDEN,
    tolerances={"bfloat16": Tolerance(atol=5e-2, rtol=5e-2, rel_norm=2e-2)},
)
