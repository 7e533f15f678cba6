"""T4 tuning-results files (Kernel Tuner's "T4" schema 1.0.0): one trajectory per file.

`{"schema_version", "metadata", "results": [{"configuration", "times", "invalidity",
"correctness", "measurements": [{"name", "value", "unit"}], "objectives"}]}`. A result whose
`invalidity` is not "correct" becomes an infeasible attempt with the mapped error category
("correctness" -> incorrect). Latency is the measurement named by the first objective
(default "time"), in the file's `metadata.timeunit` (milliseconds in every file seen so far;
seconds and microseconds are converted).

T4 metadata often names neither device nor kernel: then the chip comes from the file name
(`A100_T4.json.gz` -> "A100", if the registry knows it) and the operator from the folder name
(`convolution/`); `evidence["chip_from"]` and `evidence["op_from"]` say which.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context_with_fallback
from tunemem.ingest.error_categories import failure_category
from tunemem.ingest.errors import FormatMismatchError, UnsupportedVersionError
from tunemem.ingest.readers.kerneltuner import op_name
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES, finite, head, load_json, source_label
from tunemem.ingest.validate import json_problem, latency_problem

FORMAT = "t4"

_TIME_UNITS = {
    "ms": 1.0,
    "milliseconds": 1.0,
    "miliseconds": 1.0,
    "s": 1e3,
    "seconds": 1e3,
    "us": 1e-3,
    "microseconds": 1e-3,
}


def detect(path: Path) -> bool:
    """A `.json[.gz]` whose first bytes show T4's top-level keys."""
    if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
        return False
    first = head(path, 4096)
    return b'"results"' in first and (b'"metadata"' in first or b'"schema_version"' in first)


def _stem(path: Path) -> str:
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return name.removesuffix("_T4").removesuffix("_t4")


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield the file's rejects, then its one trajectory."""
    doc, digest = load_json(path, max_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise FormatMismatchError(path, "not a T4 file: no 'results' list")
    version = str(doc.get("schema_version", "1.0.0"))
    if not version.startswith("1."):
        raise UnsupportedVersionError(path, f"T4 schema {version} (this reader knows 1.x)")
    meta = _v if isinstance(_v := doc.get("metadata"), dict) else {}
    unit = str(meta.get("timeunit", "ms")).lower()
    scale = _TIME_UNITS.get(unit)
    if scale is None:
        raise FormatMismatchError(path, f"unknown metadata.timeunit {unit!r}")
    device = meta.get("device_name") or meta.get("device") or meta.get("hardware")
    chip, chip_from = chip_context_with_fallback(device, _stem(path))
    kernel = meta.get("kernel_name") or meta.get("kernel")
    op_from = "metadata" if kernel else "folder_name"
    kernel = str(kernel or path.parent.name)
    attempts: list[AttemptRecord] = []
    keys: list[str] = []
    for position, result in enumerate(doc["results"]):
        attempt = _attempt(len(attempts), result, scale)
        if isinstance(attempt, str):
            yield RejectedRecord(str(path), f"results[{position}]", attempt)
            continue
        if not keys:
            keys = list(attempt.params)
        attempts.append(attempt)
    if not attempts:
        raise FormatMismatchError(path, "no usable result")
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=source_label(path, digest),
        task=TaskSpec(op=op_name(kernel), kernel=kernel, signature={"tune_params_keys": keys}),
        context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=chip.raw),
        attempts=attempts,
        evidence={
            "tool": "t4",
            "schema_version": version,
            "chip_from": chip_from,
            "op_from": op_from,
            "path": str(path),
        },
    )


def _attempt(index: int, result: Any, scale: float) -> AttemptRecord | str:
    if not isinstance(result, dict) or not isinstance(result.get("configuration"), dict):
        return "result is not an object with a 'configuration' object"
    params = dict(result["configuration"])
    problem = json_problem(params, "configuration")
    if problem:
        return problem
    invalidity = str(result.get("invalidity", "correct"))
    if invalidity != "correct":
        category = failure_category(invalidity) if invalidity != "constraints" else "other"
        return AttemptRecord(
            index=index,
            params=params,
            compiled=category != "compile",
            correct=False if category == "incorrect" else None,
            error_category=category,
            error=invalidity,
        )
    objectives = result.get("objectives") or ["time"]
    wanted = objectives[0] if isinstance(objectives, list) and objectives else "time"
    value = None
    for measurement in result.get("measurements") or []:
        if isinstance(measurement, dict) and measurement.get("name") == wanted:
            value = measurement.get("value")
            break
    number = finite(value)
    if number is None:
        return f"no numeric measurement {str(wanted)[:80]!r} for a correct result: {value!r}"
    latency = number * scale
    problem = latency_problem(f"measurement {str(wanted)[:80]!r}", latency)
    if problem:
        return problem
    times = _v if isinstance(_v := result.get("times"), dict) else {}
    runtimes = times.get("runtimes")
    if not isinstance(runtimes, list) or not all(finite(r) is not None for r in runtimes):
        runtimes = None
    elif runtimes and latency_problem("runtimes", min(runtimes) * scale):
        runtimes = None
    metrics = {}
    compilation = finite(times.get("compilation"))
    if compilation is not None:
        metrics["compile_time_ms"] = compilation * scale
    return AttemptRecord(
        index=index,
        params=params,
        correct=bool(result.get("correctness", 1)),
        latency_ms=latency,
        latency_min_ms=float(min(runtimes)) * scale if runtimes else None,
        repetitions=len(runtimes) if runtimes else None,
        metrics=metrics,
    )
