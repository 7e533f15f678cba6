"""Helion's example kernels (matmul, softmax, RMSNorm forward) with their inputs and torch
references, and the shapes of the Helion seeds run, in a user's order (`seeds_gpu.py`)."""

from __future__ import annotations

import helion  # noqa: F401  (the kernels below are Helion's)
import helion.language as hl
import torch

# Module-level kernels: Helion refuses closures.


def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    k2, n = y.size()
    assert k == k2
    out = torch.empty([m, n], dtype=torch.promote_types(x.dtype, y.dtype), device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        x_tile = x[tile_m, :].to(torch.float32)
        mean_sq = torch.mean(x_tile * x_tile, dim=-1)
        inv_rms = torch.rsqrt(mean_sq + eps)
        out[tile_m, :] = (x_tile * inv_rms[:, None] * weight[:].to(torch.float32)).to(out.dtype)
    return out


def _kernels():
    def mk_matmul(shape, device):
        m, k, n = shape
        x = torch.randn(m, k, device=device, dtype=torch.float16)
        y = torch.randn(k, n, device=device, dtype=torch.float16)
        return (x, y), lambda: torch.matmul(x, y)

    def mk_softmax(shape, device):
        x = torch.randn(*shape, device=device, dtype=torch.float16)
        return (x,), lambda: torch.softmax(x.float(), dim=1).to(x.dtype)

    def mk_rms(shape, device):
        m, n = shape
        x = torch.randn(m, n, device=device, dtype=torch.float16)
        w = torch.randn(n, device=device, dtype=torch.float16)

        def ref():
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).to(
                x.dtype
            )

        return (x, w), ref

    return {
        # matmul as examples/matmul.py sets it: static shapes, no range knobs.
        "matmul": (
            matmul,
            mk_matmul,
            {
                "static_shapes": True,
                "autotune_config_overrides": {
                    "range_unroll_factors": [0, 0],
                    "range_num_stages": [0, 0],
                },
            },
        ),
        "softmax": (softmax, mk_softmax, {}),
        "rms_norm": (rms_norm, mk_rms, {}),
    }


DEFAULT_SHAPES = {
    # a user's order: mixed sizes, not sorted
    "matmul": [(2048, 2048, 2048), (1024, 4096, 1024), (4096, 4096, 4096), (8192, 1024, 2048)],
    "softmax": [(4096, 2048), (16384, 1024), (8192, 4096), (2048, 8192)],
    "rms_norm": [(4096, 4096), (16384, 2048), (8192, 8192), (2048, 16384)],
}
