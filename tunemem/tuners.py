"""The memory inside the tuners engineers already run, under short names:

    from tunemem.tuners import MemoryStrategy   # a Kernel Tuner strategy
    from tunemem.tuners import autotune         # a drop-in for `triton.autotune`
    from tunemem.tuners import tune_moe         # vLLM / SGLang fused-MoE configuration files

Each is imported when first used, so `import tunemem.tuners` costs nothing and needs neither
Kernel Tuner nor Triton until the tool that uses them is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "MemoryStrategy": "tunemem.agent_client.tuners.kernel_tuner",
    "autotune": "tunemem.agent_client.tuners.triton.autotune",
    "MemoryUnavailableWarning": "tunemem.agent_client.tuners.triton.autotune",
    "tune_moe": "tunemem.agent_client.tuners.moe.tune",
    "MoeShape": "tunemem.agent_client.tuners.moe.tune",
    "hook": "tunemem.agent_client.tuners.triton.autotune",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tunemem.tuners' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
