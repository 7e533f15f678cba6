"""One captured Triton autotune as plain data, and as the trajectory the memory stores.

The task is named as the `triton.autotune` drop-in names it (`autotune.MemoryTuning`):
op and kernel the kernel function's name, the signature the key arguments' values by name
plus the first tensor's dtype, so what a program's autotunes leave in the memory serves the
drop-in's next key and the next GPU. Each configuration is its kwargs plus num_warps and
num_stages; its timing Triton's `[median, p20, p80]` in ms (the median as the latency, the
quantiles as metrics; infinity: the configuration failed to build or launch).

Under the Triton interpreter the timings are the interpreter's wall clock on the CPU, not a
chip's: each attempt then has no latency, its wall clock is the metric `interpreter_wall_ms`,
the context is this machine's CPU marked "(Triton interpreter)", and the evidence says
`interpreter: true`.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tunemem.agent_client.tuners.triton.records import chip_id, config_params, dtype_name, scalar

FAILED = "Triton's benchmark failed (out of resources, a compile-time assertion or PTXAS)"


@dataclass(frozen=True)
class Autotune:
    """What Triton's listener gave for one autotune, as the capture queued it."""

    name: str
    key: tuple[Any, ...]
    key_names: tuple[str, ...]
    timings: list[tuple[Any, Any]]  # (triton.Config, [median, p20, p80] ms)
    best: Any
    duration_s: float | None
    interpreter: bool
    device_index: int | None


def task(tune: Autotune) -> dict[str, Any]:
    """The memory's task: as the drop-in's `task_of` would name this key."""
    dtypes = [dtype_name(v) for v in tune.key[len(tune.key_names) :] if isinstance(v, str)]
    dtype = dtypes[0] if dtypes else None
    if tune.key_names and len(tune.key) >= len(tune.key_names):
        signature = {
            name: scalar(value) for name, value in zip(tune.key_names, tune.key, strict=False)
        }
        if dtype is not None:
            signature.setdefault("dtype", dtype)
    else:  # the key's names are unknown: the key as Triton's cache file keeps it
        signature = {"key": [scalar(v) for v in tune.key]}
    return {"op": tune.name, "kernel": tune.name, "signature": signature, "dtype": dtype}


def _quantiles(timing: Any) -> list[float]:
    values = timing if isinstance(timing, list | tuple) else [timing]
    out = []
    for value in values:
        try:
            out.append(float(value))
        except (TypeError, ValueError):
            out.append(math.inf)
    return out or [math.inf]


def attempts(tune: Autotune) -> list[dict[str, Any]]:
    """Every configuration Triton timed, in Triton's order."""
    out = []
    for index, (config, timing) in enumerate(tune.timings):
        values = _quantiles(timing)
        ok = math.isfinite(values[0])
        metrics: dict[str, float] = {}
        latency = None
        if ok and tune.interpreter:
            metrics["interpreter_wall_ms"] = values[0]
        elif ok:
            latency = values[0]
            if len(values) == 3 and all(math.isfinite(v) for v in values[1:]):
                metrics = {"p20_ms": values[1], "p80_ms": values[2]}
        out.append(
            {
                "index": index,
                "params": config_params(config),
                "code": None,
                "compiled": ok,
                "correct": None,
                "error_category": None if ok else "resources",
                "error": None if ok else FAILED,
                "latency_ms": latency,
                "latency_min_ms": None,
                "repetitions": None,
                "metrics": metrics,
            }
        )
    return out


@lru_cache(maxsize=16)
def device(index: int | None, interpreter: bool) -> tuple[tuple[str, str], ...]:
    """The context of the device the autotune ran on: chip id, backend, raw name and the
    toolchain (cached per device; read on the background thread)."""
    import triton

    toolchain = {"triton": str(triton.__version__)}
    chip, backend, raw = "unknown", "unknown", "unknown"
    try:
        import torch

        toolchain["torch"] = str(torch.__version__)
        if interpreter:
            from tunemem.kernels.evidence import host_chip

            chip, backend, raw = host_chip()
            raw = f"{raw} (Triton interpreter)"
        elif torch.cuda.is_available():
            raw = torch.cuda.get_device_name(index if index is not None else 0)
            backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
            chip = chip_id(raw)
            if torch.version.cuda:
                toolchain["cuda"] = str(torch.version.cuda)
    except ImportError:
        pass
    if not interpreter and chip == "unknown":
        try:  # Triton without torch, or a backend torch does not see: Triton's own target
            from triton.runtime.driver import driver

            target = driver.active.get_current_target()
            backend, raw = str(target.backend), f"{target.backend} {target.arch}"
        except Exception:
            pass
    fields = {"chip": chip, "backend": backend, "chip_raw": raw}
    return tuple(fields.items()) + tuple((f"toolchain.{k}", v) for k, v in toolchain.items())


def context(tune: Autotune, overrides: dict[str, Any]) -> dict[str, Any]:
    fields = dict(device(tune.device_index, tune.interpreter))
    toolchain = {k.removeprefix("toolchain."): v for k, v in fields.items() if "." in k}
    out: dict[str, Any] = {
        "chip": fields["chip"],
        "backend": fields["backend"],
        "chip_raw": fields["chip_raw"],
        "model": None,
        "scenario": None,
        "toolchain": toolchain,
    }
    out.update(overrides)
    return out


def trajectory(tune: Autotune, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The autotune as a native trajectory record (dict)."""
    ctx = context(tune, dict(overrides or {}))
    evidence: dict[str, Any] = {
        "tuner": "triton.autotune (captured by tunemem capture)",
        "triton": ctx["toolchain"].get("triton"),
        "gpu": ctx["chip_raw"],
        "key": [scalar(v) for v in tune.key],
        "best_config": config_params(tune.best) if tune.best is not None else None,
        "given_configs": len(tune.timings),
        "duration_s": tune.duration_s,
        "interpreter": tune.interpreter,
        "latency_ms": (
            "none: the Triton interpreter's wall clock on the CPU (metric interpreter_wall_ms)"
            if tune.interpreter
            else "Triton autotuner's benchmark (median; p20 and p80 as metrics)"
        ),
    }
    return {
        "version": 1,
        "source_format": "native",
        "source": f"triton-capture:{tune.name}:{uuid.uuid4().hex[:12]}",
        "task": task(tune),
        "context": ctx,
        "attempts": attempts(tune),
        "baseline_latency_ms": None,
        "evidence": evidence,
        "synthetic": False,
    }
