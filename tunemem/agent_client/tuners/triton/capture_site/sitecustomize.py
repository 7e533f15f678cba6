"""Loaded by every Python process that `tunemem capture` starts (this folder is put first on
PYTHONPATH): installs the capture of Triton's autotunes, then loads the `sitecustomize` this
one shadows, as `opentelemetry-instrument` does. Nothing here may stop the program."""

import os
import sys


def _install() -> None:
    try:
        from tunemem.capture import from_environment

        from_environment()
    except Exception as exc:  # the program runs without the capture
        print(f"tunemem capture: not capturing ({type(exc).__name__}: {exc})", file=sys.stderr)


def _load_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    module = sys.modules.pop("sitecustomize", None)
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    saved, sys.path[:] = list(sys.path), path
    try:
        import sitecustomize  # noqa: F401  (the one this file shadows, if any)
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if module is not None and "sitecustomize" not in sys.modules:
            sys.modules["sitecustomize"] = module


_install()
_load_shadowed()
