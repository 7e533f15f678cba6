"""Capture the autotuners a program already runs, with no change to its kernels:

    import tunemem.capture
    tunemem.capture.triton("http://127.0.0.1:8000")   # every Triton autotune from now on

or, for a whole program and every Python process it starts, `tunemem capture -- python
my_script.py`. `prune_configs_by(memory_url, top_k=...)` is the memory's choice of
configurations for a `@triton.autotune` whose decorator you own. docs/triton.md says more.
Each name is imported when first used, so `import tunemem.capture` needs no Triton.
"""

from __future__ import annotations

from typing import Any

__all__ = ["from_environment", "prune_configs_by", "triton"]


def triton(memory_url: str, **options: Any) -> Any:
    """Send every Triton autotune of this process to the memory at `memory_url`, in the
    background; returns the installed `TritonCapture` (`summary()` says what it sent).
    Keyword arguments: api_key, timeout_s, context, max_pending."""
    from tunemem.agent_client.tuners.triton_capture import capture_triton

    return capture_triton(memory_url, **options)


def prune_configs_by(memory_url: str, *, top_k: int | float = 5, **options: Any) -> dict[str, Any]:
    """`prune_configs_by` for `@triton.autotune`: Triton times only the `top_k`
    configurations the memory ranks best for a new key (all of them when the memory cannot
    help). Keyword arguments: key, kernel, early_config_prune (yours, run first) and the
    drop-in's (api_key, timeout_s, options, context, seed)."""
    from tunemem.agent_client.tuners.triton_prune import prune_configs_by as build

    return build(memory_url, top_k=top_k, **options)


def from_environment() -> Any:
    """What `tunemem capture` runs in each Python process it starts: capture to
    `TUNEMEM_CAPTURE_URL` (None when it is not set)."""
    from tunemem.agent_client.tuners.triton_capture import capture_from_environment

    return capture_from_environment()
