"""What Kernel Tuner's runner tells about a run, for the memory strategy: the backend (from the
kernel language) and the device's name (from the runner, where it names one).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# Kernel Tuner's kernel languages and the memory's backends (OpenCL runs on every vendor:
# the device name has to tell).
LANG_BACKENDS = {"CUDA": "cuda", "CUPY": "cuda", "NVCUDA": "cuda", "HIP": "hip", "C": "cpu"}


def kernel_backend(runner: Any, kernel_options: Any) -> str | None:
    """The memory's backend of a Kernel Tuner run, from its kernel language: the one the user
    passed (`lang=`), else the one Kernel Tuner detected from a kernel source it was given (a
    simulated run has no source, and its detected language says nothing)."""
    lang = kernel_options.get("lang") if hasattr(kernel_options, "get") else None
    if not lang:
        source = getattr(runner, "kernel_source", None)
        has_source = any(bool(s) for s in getattr(source, "kernel_sources", None) or [])
        lang = getattr(source, "lang", None) if has_source else None
    return LANG_BACKENDS.get(str(lang).upper()) if lang else None


def warn_stderr(message: str) -> None:
    """The strategy's default warning: one line on standard error."""
    print(f"tunemem: {message}", file=sys.stderr)


def reported_device_name(runner: Any) -> str | None:
    """The device name Kernel Tuner's runner reports, or None."""
    get_info = getattr(runner, "get_device_info", None)
    device = get_info() if callable(get_info) else getattr(runner, "dev", None)
    name = getattr(device, "name", None)
    return name if isinstance(name, str) and name else None


def device_name(runner: Any, warn: Callable[[str], None]) -> str | None:
    """The device Kernel Tuner's runner runs on, as Kernel Tuner names it; None, with one
    warning, from a runner that names none (Kernel Tuner 1.3's simulation runner has no
    `get_device_info`): the memory then knows the run by its kernel and size only."""
    name = reported_device_name(runner)
    if name:
        return name
    if getattr(runner, "simulation_mode", False):
        warn(
            "Kernel Tuner's simulation runner names no device: pass chip=... to "
            "MemoryStrategy so that the memory knows which GPU the cache was recorded on"
        )
        return None
    warn(
        "Kernel Tuner's runner names no device (Kernel Tuner 1.4 or later does): pass "
        "chip=... to MemoryStrategy so that the memory knows which GPU this run is on"
    )
    return None
