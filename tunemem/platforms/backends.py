"""Backend descriptors: the programming stacks a chip is driven through (CUDA, HIP, ...)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    """A kernel backend: who makes it, what kernels are written in, its native warp width."""

    id: str
    name: str
    vendor: str
    language: str
    warp_size: int | None


_BACKENDS: dict[str, Backend] = {
    b.id: b
    for b in (
        Backend("cuda", "NVIDIA CUDA", "nvidia", "CUDA C++/Triton", 32),
        # CDNA (Instinct) runs wave64; RDNA parts run HIP in wave32: the chip's warp_size wins.
        Backend("hip", "AMD ROCm/HIP", "amd", "HIP/Triton", 64),
        Backend("ascend", "Huawei CANN/Ascend", "huawei", "Ascend C", None),
        Backend("xpu", "Intel oneAPI/XPU", "intel", "SYCL/Triton", 16),
        # A CPU has no warp; its SIMD width depends on the part.
        Backend("cpu", "Host CPU", "generic", "C++/Triton-CPU", None),
    )
}

BACKENDS: tuple[str, ...] = tuple(_BACKENDS)


def get_backend(backend_id: str) -> Backend:
    """The backend descriptor with this id; KeyError naming the valid ids otherwise."""
    try:
        return _BACKENDS[backend_id]
    except KeyError:
        raise KeyError(
            f"unknown backend {backend_id!r}; valid backends: {', '.join(BACKENDS)}"
        ) from None
