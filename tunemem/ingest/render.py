"""Wording shared by distilled lessons: where a trajectory ran, configurations, numbers.

Texts must read well to an LLM on their own, so they name chip, backend, operator and problem
size, and print numbers with units and thousands separators.
"""

from __future__ import annotations

from typing import Any

from tunemem.ingest.records import TrajectoryRecord


def fmt_count(n: int) -> str:
    """4201 -> "4,201"."""
    return f"{n:,}"


def fmt_ratio(ratio: float) -> str:
    """1.4213 -> "1.42x"."""
    return f"{ratio:.2f}x"


def fmt_ms(ms: float) -> str:
    """A latency in ms with three significant digits ("0.512 ms", "97.7 ms")."""
    if ms >= 100:
        return f"{ms:,.0f} ms"
    return f"{ms:.3g} ms"


def config_text(params: dict[str, Any]) -> str:
    """{"a": 1, "b": 2} -> "a=1, b=2"."""
    return ", ".join(f"{k}={v}" for k, v in params.items()) if params else "(no parameters)"


def _value_text(key: str, value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return "x".join(str(v) for v in value) if key.endswith("size") else str(value)
    return str(value)


def signature_text(signature: dict[str, Any], kernel: str | None = None) -> str:
    """Problem shape in words, leaving out empty values, the list of tuned parameters and a
    value that only repeats the kernel name."""
    parts = []
    for key, value in signature.items():
        if value in (None, [], {}, kernel) or key == "tune_params_keys":
            continue
        parts.append(f"{key.replace('_', ' ')} {_value_text(key, value)}")
    return ", ".join(parts)


def describe_task(traj: TrajectoryRecord) -> str:
    """ "On NVIDIA A100-PCIE-40GB (a100, cuda), convolution (convolution_kernel, problem size
    4096x4096)" — the opening of every lesson text."""
    ctx, task = traj.context, traj.task
    raw = (ctx.chip_raw or "").replace("_", " ").strip()
    if ctx.chip == "unknown":
        device = "an unrecorded device" + (f" ({ctx.backend})" if ctx.backend != "unknown" else "")
    elif raw and raw.lower() != ctx.chip:
        device = f"{raw} ({ctx.chip}, {ctx.backend})"
    else:
        device = f"{ctx.chip} ({ctx.backend})"
    details = [
        d
        for d in (
            task.kernel if task.kernel != task.op else None,
            signature_text(task.signature, task.kernel),
        )
        if d
    ]
    scope = f"model {ctx.model}" if ctx.model else ""
    if ctx.scenario:
        scope = f"{scope}, {ctx.scenario}".strip(", ")
    where = f"On {device}, {task.op}" + (f" ({'; '.join(details)})" if details else "")
    if task.dtype:
        where += f" in {task.dtype}"
    return where + (f" [{scope}]" if scope else "")
