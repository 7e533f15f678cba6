"""Recorded fused-MoE timings as a timing function: replay a landscape without a GPU.

A landscape is what `kernels.moe_sweep` writes (JSON lines, optionally gzipped: batch size `m`,
`config`, `us` or null with the `error`). `recorded_benchmark(path)` returns a function with
vLLM's `benchmark_config` signature that answers from the file, and the configurations it
holds, so a tuner restricted to them can be run and checked on any machine.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunemem.kernels.moe_space import config_key


class NotRecordedError(KeyError):
    """A configuration or batch size the landscape does not hold."""


def load_landscape(
    path: Path,
) -> dict[int, dict[tuple[int, ...], tuple[dict[str, int], float | None]]]:
    """{batch size: {config key: (config, microseconds or None)}} from a sweep's file."""
    opener = gzip.open if path.suffix == ".gz" else open
    times: dict[int, dict[tuple[int, ...], tuple[dict[str, int], float | None]]] = {}
    with opener(path, "rt") as handle:  # type: ignore[operator]
        for number, line in enumerate(handle, start=1):
            try:
                row = json.loads(line)
                times.setdefault(int(row["m"]), {})[config_key(row["config"])] = (
                    row["config"],
                    None if row["us"] is None else float(row["us"]),
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a sweep row ({exc})") from exc
    if not times:
        raise ValueError(f"{path}: no timings")
    return times


def recorded_benchmark(path: Path) -> tuple[Callable[..., float], list[dict[str, int]], list[int]]:
    """(benchmark_config-shaped function, the recorded configurations, the batch sizes)."""
    times = load_landscape(path)

    def benchmark(config: dict[str, Any], num_tokens: int, *_args: Any, **_kw: Any) -> float:
        try:
            _, us = times[num_tokens][config_key(config)]
        except KeyError as exc:
            raise NotRecordedError(f"batch size {num_tokens} / {config} not recorded") from exc
        if us is None:
            raise RuntimeError("this configuration failed when it was recorded")
        return us

    # A tuner that times with this function replays a recording: it says so when it stores
    # the run (`tune_moe` reads this mark), so a replay is never taken for a measurement.
    benchmark.recording = str(path)  # type: ignore[attr-defined]
    configs: dict[tuple[int, ...], dict[str, int]] = {}
    for entries in times.values():
        for key, (config, _) in entries.items():
            configs.setdefault(key, config)
    return benchmark, list(configs.values()), sorted(times)
