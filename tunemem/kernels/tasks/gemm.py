"""bf16 GEMM: C[M, N] = A[M, K] @ B[K, N], fp32 accumulation.

Template: one program per BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps through a
NUM_STAGES-deep software pipeline; tiles are visited in GROUP_M-tall column groups so that
programs running together share A and B tiles in L2. LOAD picks pointer loads or
tensor-memory-accelerator descriptors (Hopper's TMA); PERSISTENT (TMA only) launches one
program per SM that walks the tiles.
"""

from __future__ import annotations

from typing import Any

import torch
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
def gemm_tiled_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    group = pid // tiles_per_group
    first_m = group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % tiles_per_group) % group_rows)
    pid_n = (pid % tiles_per_group) // group_rows

    # Wrapping the row/column offsets keeps the loads unmasked; the store masks the overhang.
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + rows[:, None].to(tl.int64) * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def gemm_tma_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    # Tiles are loaded by the tensor-memory accelerator (out-of-range parts read as zeros,
    # the store clips). A program walks tiles pid, pid + programs, ...: one tile each when
    # the grid covers every tile, a persistent schedule when the grid is one program per SM.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        first_m = (tile // tiles_per_group) * GROUP_M
        group_rows = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + ((tile % tiles_per_group) % group_rows)
        pid_n = (tile % tiles_per_group) // group_rows
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in tl.range(0, k_steps, num_stages=NUM_STAGES):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def launch(config: dict[str, Any], a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Run the GEMM template with one configuration; returns a new tensor."""
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    bm, bn, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    if config["LOAD"] == "tma":
        programs = min(tiles, processor_count(a.device)) if config["PERSISTENT"] else tiles
        gemm_tma_kernel[(programs,)](
            TensorDescriptor.from_tensor(a, [bm, bk]),
            TensorDescriptor.from_tensor(b, [bk, bn]),
            TensorDescriptor.from_tensor(c, [bm, bn]),
            m,
            n,
            k,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=config["GROUP_M"],
            NUM_STAGES=config["num_stages"],
            num_warps=config["num_warps"],
            num_stages=config["num_stages"],
        )
        return c
    gemm_tiled_kernel[(tiles,)](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=config["GROUP_M"],
        EVEN_K=k % bk == 0,
        NUM_STAGES=config["num_stages"],
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    return c


def processor_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (a small fixed count on CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def shared_memory_bytes(config: dict[str, Any], element_size: int = 2) -> int:
    """Shared memory the pipelined A and B tiles need."""
    tile = config["BLOCK_M"] * config["BLOCK_K"] + config["BLOCK_K"] * config["BLOCK_N"]
    return tile * element_size * config["num_stages"]


def check(config: dict[str, Any], dims: dict[str, int]) -> ConfigViolation | None:
    """Tiles must fit shared memory and registers, and not dwarf the matrix."""
    if config["PERSISTENT"] and config["LOAD"] != "tma":
        return ConfigViolation("other", "the persistent schedule is built on the TMA kernel")
    if config["LOAD"] == "tma" and (dims["K"] % 8 or dims["N"] % 8):
        return ConfigViolation("other", "TMA needs 16-byte aligned rows (K, N multiples of 8)")
    smem = shared_memory_bytes(config)
    if smem > SHARED_MEMORY_LIMIT_BYTES:
        return ConfigViolation("resources", f"needs {smem} B of shared memory")
    per_thread = config["BLOCK_M"] * config["BLOCK_N"] / (32 * config["num_warps"])
    if per_thread > MAX_ACCUMULATORS_PER_THREAD:
        return ConfigViolation("resources", f"{per_thread:.0f} accumulators per thread spill")
    if config["BLOCK_M"] > 2 * max(dims["M"], 16) or config["BLOCK_N"] > 2 * max(dims["N"], 16):
        return ConfigViolation("other", "tile more than twice the matrix")
    return None


def make_inputs(dims: dict[str, int], dtype: torch.dtype, device: str, seed: int):
    a = random_normal((dims["M"], dims["K"]), dtype, device, seed)
    b = random_normal((dims["K"], dims["N"]), dtype, device, seed + 104729)
    return a, b


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.float() @ b.float()


def torch_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def _shape(
    name: str, m: int, n: int, k: int, model: str | None = None, scenario: str | None = None
):
    return ShapeCase(name, {"M": m, "N": n, "K": k}, model, scenario)


TASK = KernelTask(
    name="gemm",
    op="gemm",
    kernel="gemm_tiled_kernel",
    description="bf16 matrix product with fp32 accumulation, grouped tile order",
    parameter_space={
        "BLOCK_M": [16, 32, 64, 128, 256],
        "BLOCK_N": [16, 32, 64, 128, 256],
        "BLOCK_K": [16, 32, 64, 128],
        "GROUP_M": [1, 4, 8, 16],
        "num_warps": [2, 4, 8],
        "num_stages": [1, 2, 3, 4, 5],
        "LOAD": ["pointer", "tma"],
        "PERSISTENT": [False, True],
    },
    tuning_space={
        "BLOCK_M": [64, 128, 256],
        "BLOCK_N": [128, 256],
        "BLOCK_K": [64, 128],
        "GROUP_M": [8],
        "num_warps": [4, 8],
        "num_stages": [3, 4, 5],
        "LOAD": ["pointer", "tma"],
        "PERSISTENT": [False, True],
    },
    make_inputs=make_inputs,
    reference=reference,
    torch_op=torch_op,
    launch=launch,
    check=check,
    flops=lambda d: 2.0 * d["M"] * d["N"] * d["K"],
    bytes_moved=lambda d, elt: float(d["M"] * d["K"] + d["K"] * d["N"] + d["M"] * d["N"]) * elt,
    bound="compute",
    shapes=[
        _shape("square-4096", 4096, 4096, 4096),
        _shape("square-8192", 8192, 8192, 8192),
        _shape("llama3-8b-mlp-up-prefill-s4096", 4096, 14336, 4096, "Llama-3-8B", "prefill"),
        _shape("llama3-8b-mlp-down-prefill-s4096", 4096, 4096, 14336, "Llama-3-8B", "prefill"),
        _shape("llama3-70b-qkv-prefill-s8192", 8192, 10240, 8192, "Llama-3-70B", "prefill"),
        _shape("llama3-8b-mlp-up-decode-b64", 64, 14336, 4096, "Llama-3-8B", "decode"),
    ],
    small_shapes=[_shape("tiny-48x40x64", 48, 40, 64), _shape("tiny-33x17x40", 33, 17, 40)],
    forbidden_ops=frozenset({"mm", "addmm", "bmm", "matmul", "dot", "mv", "einsum", "linear"}),
)
