"""Capture the autotuners a program already runs, with no change to its kernels:

    import tunemem.capture
    tunemem.capture.triton("http://127.0.0.1:8000")   # every Triton autotune from now on

or, for a whole program and every Python process it starts, `tunemem capture -- python
my_script.py`. `prune_configs_by(memory_url, top_k=...)` is the memory's choice of
configurations for a `@triton.autotune` whose decorator you own. docs/triton.md says more.
Each name is imported when first used, so `import tunemem.capture` needs no Triton.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

__all__ = ["from_environment", "prune_configs_by", "triton"]


def triton(memory_url: str, **options: Any) -> Any:
    """Send every Triton autotune of this process to the memory at `memory_url`, in the
    background; returns the installed `TritonCapture` (`summary()` says what it sent).
    Keyword arguments: api_key, timeout_s, context, max_pending."""
    from tunemem.agent_client.tuners.triton.capture import capture_triton

    return capture_triton(memory_url, **options)


def prune_configs_by(memory_url: str, *, top_k: int | float = 5, **options: Any) -> dict[str, Any]:
    """`prune_configs_by` for `@triton.autotune`: Triton times only the `top_k`
    configurations the memory ranks best for a new key (all of them when the memory cannot
    help). Keyword arguments: key, kernel, early_config_prune (yours, run first) and the
    drop-in's (api_key, timeout_s, options, context, seed)."""
    from tunemem.agent_client.tuners.triton.prune import prune_configs_by as build

    return build(memory_url, top_k=top_k, **options)


URL_VARIABLE = "TUNEMEM_CAPTURE_URL"
KEY_VARIABLE = "TUNEMEM_CAPTURE_API_KEY"


def from_environment() -> bool:
    """What `tunemem capture` runs in each Python process it starts: capture to
    `TUNEMEM_CAPTURE_URL` (False when it is not set), at once if Triton is imported already,
    else right after the program imports it; a program that never imports Triton loads
    nothing more than this module."""
    url = os.environ.get(URL_VARIABLE)
    if not url:
        return False
    api_key = os.environ.get(KEY_VARIABLE) or None

    def install() -> None:
        triton(url, api_key=api_key)

    if "triton" in sys.modules:
        install()
    else:
        sys.meta_path.insert(0, _AfterImport("triton", install))
    return True


class _AfterImport:
    """A meta-path finder that runs `then()` right after module `name` is first imported
    (it loads nothing itself: the other finders load the module as always)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then, self.done = name, then, False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self.done:
            return None
        self.done = True
        try:
            spec = find_spec(fullname)
        finally:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute, then = loader.exec_module, self.then

        def exec_module(module: Any) -> None:
            execute(module)
            try:
                then()
            except Exception as exc:  # the program goes on without the capture
                print(
                    f"tunemem capture: not capturing ({type(exc).__name__}: {exc})", file=sys.stderr
                )

        loader.exec_module = exec_module
        return spec
