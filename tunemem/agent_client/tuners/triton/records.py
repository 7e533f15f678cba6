"""What the Triton drop-in sends to the memory, as plain data.

How a `triton.Config` looks to the memory (its kwargs plus num_warps and num_stages), the device
context, and a tuned key as outcomes against its suggestion and as a native trajectory record.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tunemem.agent_client.models import Outcome

_SCALARS = (bool, int, float, str, type(None))


def config_params(config: Any) -> dict[str, Any]:
    """A `triton.Config` as the memory sees it: its kwargs plus num_warps and num_stages."""
    params = {name: scalar(value) for name, value in dict(config.kwargs).items()}
    params["num_warps"] = config.num_warps
    params["num_stages"] = config.num_stages
    return params


def scalar(value: Any) -> Any:
    return value if isinstance(value, _SCALARS) else str(value)


def params_key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), repr(v)) for k, v in params.items()))


def dtype_name(value: Any) -> str:
    return str(value).removeprefix("torch.")


def timing_ms(timing: Any) -> float:
    """Triton's timing ([median, p20, p80] or a number; None: failed) in ms, inf for a failure."""
    value = timing[0] if isinstance(timing, list | tuple) else timing
    return float(value) if value is not None else math.inf


# p80 - p20 of a normal distribution, in standard deviations (2 x 0.8416)
P20_P80_SIGMAS = 1.6832


def timing_spread_ms(timing: Any) -> float | None:
    """The spread of the runs behind Triton's timing: its benchmark times a configuration
    many times within `rep` ms and answers the quantiles [median, p20, p80]; their p20-p80
    width as a standard deviation. None for a bare number or a failure."""
    if not isinstance(timing, list | tuple) or len(timing) < 3:
        return None
    low, high = timing[1], timing[2]
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (low, high)):
        return None
    return max(float(high) - float(low), 0.0) / P20_P80_SIGMAS


def interpreter_bench(kernel_call: Callable[[], Any], quantiles: Any = None) -> list[float]:
    """Wall-clock timing for the Triton interpreter, which has no GPU benchmarker: one warm-up
    call, then the median of three (in ms, as Triton's [median, p20, p80])."""
    kernel_call()
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        kernel_call()
        runs.append((time.perf_counter() - started) * 1e3)
    runs.sort()
    return [runs[1], runs[0], runs[2]]


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def device_context() -> dict[str, Any]:
    """The context of this process's device: chip name, backend and toolchain versions."""
    import triton

    toolchain = {"triton": triton.__version__}
    chip, backend = "cpu", "cpu"
    try:
        import torch

        toolchain["torch"] = torch.__version__
        if not interpreting() and torch.cuda.is_available():
            chip = torch.cuda.get_device_name()
            backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
            if torch.version.cuda:
                toolchain["cuda"] = str(torch.version.cuda)
    except ImportError:
        pass
    return {"chip": chip, "backend": backend, "toolchain": toolchain}


@dataclass
class Pending:
    """What the prune decided for one new key, waiting for Triton's timings."""

    task: dict[str, Any]
    key: dict[str, Any]
    given: int
    timed: list[dict[str, Any]]
    origins: dict[tuple[tuple[str, Any], ...], str]
    suggestions: dict[tuple[tuple[str, Any], ...], list[str]] = field(default_factory=dict)
    retrieval_id: str | None = None
    # Each round asks anew: the retrieval each suggested configuration came from.
    retrievals: dict[tuple[tuple[str, Any], ...], str] = field(default_factory=dict)
    search: Any = None  # the key's `rounds.SearchResult`, when it searched in rounds


def measured_here(origin: str = "measured") -> dict[str, Any]:
    """The provenance of Triton's timings in this process: measured, on the device the runtime
    names (whatever chip the caller's context overrides name); or, for timings that a replay
    looked up in a recording, `replayed` with no device of its own."""
    if origin != "measured":
        return {"origin": origin}
    return {"origin": "measured", "device_reported": device_context()["chip"]}


def outcomes(
    pending: Pending,
    measured: list[tuple[dict[str, Any], float]],
    origin: str = "measured",
    spreads: Mapping[tuple[tuple[str, Any], ...], float | None] | None = None,
) -> list[dict[str, Any]]:
    """One outcome per suggested configuration that was timed, in timing order, with its
    configuration and the spread of Triton's runs (`spreads`, by `params_key`) where known."""
    provenance = measured_here(origin)
    out: list[dict[str, Any]] = []
    best: float | None = None
    for params, ms in measured:
        spread = (spreads or {}).get(params_key(params))
        lessons = pending.suggestions.get(params_key(params))
        retrieval_id = pending.retrievals.get(params_key(params), pending.retrieval_id)
        ok = math.isfinite(ms)
        if lessons is not None and retrieval_id:
            outcome = Outcome(
                compiled=ok,
                correct=True if ok else None,
                latency_ms=ms if ok else None,
                best_before_ms=best,
                error=None if ok else "Triton's benchmark failed (out of resources)",
                provenance=provenance,
                config=dict(params),
                latency_spread_ms=spread if ok else None,
            )
            out.append({"used": lessons, "outcome": outcome, "retrieval_id": retrieval_id})
        if ok:
            best = ms if best is None else min(best, ms)
    return out


def trajectory(
    pending: Pending,
    measured: list[tuple[dict[str, Any], float]],
    context: dict[str, Any],
    origin: str = "measured",
) -> dict[str, Any]:
    """The tuning of one key as a native trajectory record (dict)."""
    import triton

    attempts = []
    for index, (params, ms) in enumerate(measured):
        ok = math.isfinite(ms)
        attempts.append(
            {
                "index": index,
                "params": params,
                "code": None,
                "compiled": ok,
                "correct": True if ok else None,
                "error_category": None if ok else "resources",
                "error": None if ok else "Triton's benchmark failed (out of resources)",
                "latency_ms": ms if ok else None,
                "latency_min_ms": None,
                "repetitions": None,
                "metrics": {},
            }
        )
    task = pending.task
    chip = chip_id(context["chip"])
    return {
        "version": 1,
        "source_format": "native",
        "source": f"triton-autotune:{task['kernel']}:{uuid.uuid4().hex[:12]}",
        "task": task,
        "context": {
            "chip": chip,
            "backend": context["backend"],
            "chip_raw": context["chip"],
            "model": context.get("model"),
            "scenario": context.get("scenario"),
            "toolchain": dict(context.get("toolchain") or {}),
        },
        "attempts": attempts,
        "baseline_latency_ms": None,
        "evidence": {
            "tuner": "triton.autotune+tunemem",
            "triton": triton.__version__,
            "gpu": context["chip"],
            "key": pending.key,
            "given_configs": pending.given,
            "retrieval_id": pending.retrieval_id,
            "origins": [pending.origins.get(params_key(p), "given") for p, _ in measured],
            "latency_ms": "Triton autotuner's benchmark (median)",
        },
        "synthetic": False,
        "provenance": {
            **measured_here(origin),
            # Every configuration the caller listed timed: the whole space it declared.
            "coverage": "complete" if len(measured) >= pending.given else "partial",
        },
    }


def chip_id(name: str) -> str:
    """The memory's id of a chip name ("NVIDIA H200" -> "h200"), as stored runs name it."""
    from tunemem.kernels.evidence import chip_identity

    return chip_identity(name)[0]
