"""Triton autotune cache files (`<kernel>.autotune.json`): one trajectory per file.

Written by `@triton.autotune(..., cache_results=True)` into the Triton cache
(`$TRITON_CACHE_DIR/<hash>/<kernel>.autotune.json`, Triton >= 3.2, not under the interpreter):
`{"key": [autotune key values..., arg dtypes...], "configs_timings": [[config, timings], ...]}`
where `config` is `Config.__dict__` (`kwargs`, `num_warps`, `num_stages`, `num_ctas`, `maxnreg`,
...) and `timings` are `do_bench` quantiles (0.5, 0.2, 0.8) in ms; a configuration that failed to
build (OutOfResources, compile-time assertion, PTXAS error) is timed as infinity.

The file records neither device nor backend: the chip is the explicit `unknown` chip.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import FormatMismatchError
from tunemem.ingest.readers.kerneltuner import op_name
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import (
    DEFAULT_MAX_FILE_BYTES,
    finite,
    is_number,
    load_json,
    source_label,
)
from tunemem.ingest.validate import json_problem, latency_problem

FORMAT = "triton-autotune"
SUFFIX = ".autotune.json"
_LAUNCH_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def detect(path: Path) -> bool:
    """The file name ends in `.autotune.json`."""
    return path.is_file() and path.name.endswith(SUFFIX)


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield rejects for malformed pairs, then the file's trajectory."""
    doc, digest = load_json(path, max_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("configs_timings"), list):
        raise FormatMismatchError(path, "no 'configs_timings' list")
    key = doc.get("key")
    key_list = key if isinstance(key, list) else [key]
    dtypes = [
        k.removeprefix("torch.") for k in key_list if isinstance(k, str) and k.startswith("torch.")
    ]
    kernel = path.name[: -len(SUFFIX)]
    attempts: list[AttemptRecord] = []
    for position, pair in enumerate(doc["configs_timings"]):
        attempt = _attempt(len(attempts), pair)
        if isinstance(attempt, str):
            yield RejectedRecord(str(path), f"configs_timings[{position}]", attempt)
            continue
        attempts.append(attempt)
    if not attempts:
        raise FormatMismatchError(path, "no usable configuration")
    chip = chip_context(None)
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=source_label(path, digest),
        task=TaskSpec(
            op=op_name(kernel),
            kernel=kernel,
            signature={"key": key_list},
            dtype=dtypes[0] if dtypes else None,
        ),
        context=ContextSpec(chip=chip.chip, backend=chip.backend),
        attempts=attempts,
        evidence={
            "tool": "triton.autotune",
            "timings": "do_bench quantiles 0.5, 0.2, 0.8 (ms)",
            "chip_from": "none",
            "path": str(path),
        },
    )


def _attempt(index: int, pair: Any) -> AttemptRecord | str:
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict)):
        return "entry is not a [config, timings] pair"
    config, timings = pair
    kwargs = _v if isinstance(_v := config.get("kwargs"), dict) else {}
    params = dict(kwargs)
    for name in _LAUNCH_KEYS:
        if config.get(name) is not None:
            params[name] = config[name]
    problem = json_problem(params, "config")
    if problem:
        return problem
    values = timings if isinstance(timings, list) else [timings]
    if not values or not all(is_number(v) for v in values):
        return f"timings are not numbers: {str(timings)[:80]!r}"
    if values[0] == math.inf:
        return AttemptRecord(
            index=index,
            params=params,
            compiled=False,
            correct=None,
            error_category="other",
            error="timed as infinity: failed to build or launch (OutOfResources, "
            "compile-time assertion or PTXAS error)",
        )
    problem = latency_problem("timing", values[0])
    if problem:
        return problem
    metrics = {}
    if len(values) == 3 and all(finite(v) is not None for v in values[1:]):
        metrics = {"p20_ms": float(values[1]), "p80_ms": float(values[2])}
    return AttemptRecord(index=index, params=params, latency_ms=float(values[0]), metrics=metrics)
