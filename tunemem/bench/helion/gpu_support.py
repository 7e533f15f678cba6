"""What `seeds_gpu.py` needs beside its arms: the package's pure Helion modules loaded where
tunemem's service dependencies are missing (the GPU machine), Helion's logs read back, and the
chosen kernels re-timed side by side."""

from __future__ import annotations

import csv
import importlib
import json
import statistics
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

PURE = ("ranking", "trust", "memory_first")


def pure_helion_modules(tunemem_root: Path) -> dict[str, types.ModuleType]:
    """`ranking`, `trust` and `memory_first` of `tunemem.agent_client.tuners.helion`: imported
    normally when tunemem installs fully, else by path under stub parent packages (their
    `__init__` files import httpx and pydantic, which the GPU machine lacks)."""
    base = "tunemem.agent_client.tuners.helion"
    try:
        return {name: importlib.import_module(f"{base}.{name}") for name in PURE}
    except ImportError:
        pass
    folder = tunemem_root
    for name in ("tunemem", "tunemem.agent_client", "tunemem.agent_client.tuners", base):
        if name != "tunemem":
            folder = folder / name.rsplit(".", 1)[1]
        module = sys.modules.get(name)
        if module is None or not hasattr(module, "__path__"):
            module = types.ModuleType(name)
            sys.modules[name] = module
        module.__path__ = [str(folder)]
    return {name: importlib.import_module(f"{base}.{name}") for name in PURE}


def read_helion_log(base: Path) -> list[dict[str, Any]]:
    """Rows of one arm's HELION_AUTOTUNE_LOG (CSV joined to the .meta.jsonl configs)."""
    csv_path = base.with_suffix(".csv")
    meta_path = base.with_suffix(".meta.jsonl")
    configs: dict[str, dict[str, Any]] = {}
    if meta_path.exists():
        for line in meta_path.read_text().splitlines():
            if line.strip():
                configs.update(json.loads(line).get("configs") or {})
    rows: list[dict[str, Any]] = []
    if csv_path.exists():
        with csv_path.open(newline="") as f:
            for row in csv.DictReader(f):
                row["config_dict"] = configs.get(row.get("config_id", ""))
                rows.append(row)
    return rows


def ok_timings(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """(configuration, ms) of every `ok` row that has both."""
    return [
        (row["config_dict"], float(row["perf_ms"]))
        for row in rows
        if row.get("status") == "ok" and row.get("perf_ms") and row.get("config_dict") is not None
    ]


def bench_ms(fns: dict[str, Callable[[], Any]], rounds: int = 5) -> dict[str, dict[str, Any]]:
    """Median of per-round `do_bench` medians (ms) per arm, the arms interleaved."""
    from triton.testing import do_bench

    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
    return {
        name: {
            "median_ms": statistics.median(v),
            "min_ms": min(v),
            "max_ms": max(v),
            "spread_pct": 100.0 * (max(v) - min(v)) / statistics.median(v),
            "rounds": v,
        }
        for name, v in samples.items()
    }
