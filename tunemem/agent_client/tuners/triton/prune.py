"""`prune_configs_by` from the memory, for a `@triton.autotune` whose decorator you own.

    @triton.autotune(configs, key=["n"],
                     prune_configs_by=tunemem.capture.prune_configs_by(URL, top_k=4))

Triton calls `early_config_prune(configs, named_args, **kwargs)` once per new key, before it
times anything; this one asks the memory for the best `top_k` of the given configurations for
the key (the drop-in's opening round: `autotune.MemoryTuning.choose` without
benchmarking) and returns them, or all of them when the memory cannot help (one warning).
Triton then times them as always, and the capture (`tunemem capture`, or
`tunemem.capture.triton`) sends the timings back. The kernel's name and key names are read
from the calling `Autotuner`; `kernel=` and `key=` name them where that is not possible.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tunemem.agent_client.tuners.triton.autotune import MemoryTuning


class MemoryPrune:
    """Triton's `early_config_prune`, answered by the memory (see the module).

    Args:
        memory_url: the memory service's address.
        top_k: configurations to keep for a new key: an int, or a fraction <= 1.0.
        key: the autotune key's argument names (default: the calling Autotuner's).
        kernel: how the memory names the kernel (default: the kernel function's name).
        early_config_prune: your own prune, run first.
        memory: `MemoryTuning`'s other keywords (api_key, timeout_s, options, context,
            seed, client, signature).
    """

    def __init__(
        self,
        memory_url: str,
        *,
        top_k: int | float = 5,
        key: list[str] | None = None,
        kernel: str | None = None,
        early_config_prune: Callable[..., Any] | None = None,
        **memory: Any,
    ) -> None:
        self.memory_url = memory_url
        self.top_k = top_k
        self.key = list(key) if key is not None else None
        self.kernel = kernel
        self.user_prune = early_config_prune
        self.memory = memory
        self.tunings: dict[str, MemoryTuning] = {}  # one per kernel this prune serves
        if isinstance(top_k, bool) or not isinstance(top_k, int | float) or top_k <= 0:
            raise ValueError(f"top_k must be a positive int or a fraction <= 1.0, not {top_k!r}")
        if isinstance(top_k, float) and top_k > 1.0:
            raise ValueError(f"a float top_k is a fraction <= 1.0, not {top_k!r}")

    def __call__(self, configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> Any:
        if self.user_prune is not None:
            configs = self.user_prune(configs, named_args, **kwargs)
        autotuner = _calling_autotuner()
        keys = self.key if self.key is not None else list(getattr(autotuner, "keys", []) or [])
        name = self.kernel or _function_name(autotuner)
        tuning = self.tunings.get(name)
        if tuning is None:
            tuning = MemoryTuning(
                self.memory_url, top_k=self.top_k, op=name, kernel=name, **self.memory
            )
            self.tunings[name] = tuning
        return tuning.choose(list(configs), {**named_args, **kwargs}, keys, None)

    def last_decision(self, kernel: str) -> dict[str, Any] | None:
        """What was kept for the kernel's last new key, and why."""
        tuning = self.tunings.get(kernel)
        return tuning.last_decision if tuning is not None else None


def prune_configs_by(memory_url: str, *, top_k: int | float = 5, **options: Any) -> dict[str, Any]:
    """Triton's `prune_configs_by` dict with the memory's `early_config_prune`."""
    return {"early_config_prune": MemoryPrune(memory_url, top_k=top_k, **options)}


def _calling_autotuner() -> Any:
    """The `Autotuner` whose `prune_configs` called (a few frames up), or None."""
    frame: Any = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if hasattr(candidate, "keys") and hasattr(candidate, "arg_names"):
            return candidate
        frame = frame.f_back
    return None


def _function_name(autotuner: Any) -> str:
    fn = getattr(autotuner, "base_fn", None) or getattr(autotuner, "fn", None)
    return str(getattr(fn, "__name__", "kernel"))
