"""Kernel Tuner cache files (`.json`, `.json.gz`): one trajectory per file.

A cache holds `device_name, kernel_name, problem_size, tune_params_keys, tune_params,
objective, cache`; `cache` maps "v1,v2,..." to an entry with the parameters, `time` (ms, or a
failure marker string), `times` (every repetition, ms), `compile_time` (ms) and throughput
(`GFLOP/s`, `GB/s`). Attempts follow the cache's order. A failed configuration becomes an
infeasible attempt with its error category; an entry that is not an object, lacks some of the
parameters or has no usable `time` (a failure marker or a latency between 0 and 1e9 ms)
becomes a reject; a `device_name` that is not a string rejects the file.

Caches written by older Kernel Tuner versions have no `problem_size` or `objective`, and their
entries hold only `time`: the parameter values are the key, in `tune_params_keys` order. Such
an entry's parameters are read from its key, each value matched to the declared `tune_params`
value it spells (so 16 stays an int and "float" a string).

An "open" cache, the file an interrupted Kernel Tuner run leaves (its entries end in a comma,
the closing braces never written), is read as Kernel Tuner itself reads it: closed first, and
`evidence["open_cache"]` says so.

The trajectory's provenance is `recorded`, its coverage `complete` or `partial` as
`provenance.kerneltuner_coverage` decides from the file (`evidence["coverage_basis"]` says why).

When `device_name` is empty (some HIP caches), the chip is taken from the file name if the
platform registry knows it, and `evidence["chip_from"]` says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context_with_fallback
from tunemem.ingest.error_categories import failure_category
from tunemem.ingest.errors import FileUnreadableError, FormatMismatchError
from tunemem.ingest.provenance import Provenance, kerneltuner_coverage
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
    head,
    is_number,
    load_json,
    parse_json,
    read_bytes,
    source_label,
)
from tunemem.ingest.validate import json_problem, latency_problem

FORMAT = "kerneltuner"

_METRIC_KEYS = ("GFLOP/s", "GB/s", "TFLOP/s", "compile_time", "verification_time")


def detect(path: Path) -> bool:
    """A `.json[.gz]` whose first bytes hold Kernel Tuner's top-level cache keys."""
    if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
        return False
    first = head(path, 4096)
    return (
        first.lstrip().startswith(b"{")
        and (
            b'"device_name"' in first or b'"tune_params_keys"' in first or b'"kernel_name"' in first
        )
        and b'"results"' not in first
    )


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def op_name(kernel_name: str) -> str:
    """Operator family from a kernel name: "convolution_kernel" -> "convolution"."""
    return kernel_name[: -len("_kernel")] if kernel_name.endswith("_kernel") else kernel_name


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield the cache's rejects, then its one trajectory."""
    doc, digest, was_open = _load_cache(path, max_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("cache"), dict):
        raise FormatMismatchError(path, "not a Kernel Tuner cache: no 'cache' object")
    space = doc.get("tune_params")
    keys = doc.get("tune_params_keys") or (list(space) if isinstance(space, dict) else [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise FormatMismatchError(path, "'tune_params_keys' is not a list of names")
    if not keys:
        raise FormatMismatchError(path, "no 'tune_params_keys' or 'tune_params'")
    device = doc.get("device_name")
    if device is not None and not isinstance(device, str):
        raise FormatMismatchError(
            path, f"'device_name' must be a string, not {type(device).__name__}"
        )
    kernel_name = str(doc.get("kernel_name") or _stem(path))
    chip, chip_from = chip_context_with_fallback(device, _stem(path))
    declared: dict[str, Any] = space if isinstance(space, dict) else {}
    attempts: list[AttemptRecord] = []
    first_stamp = None
    numeric = numeric_parameters(declared)
    rejects: list[RejectedRecord] = []
    for key, entry in doc["cache"].items():
        attempt = _attempt(len(attempts), keys, key, entry, declared, numeric)
        if isinstance(attempt, str):
            rejects.append(RejectedRecord(str(path), f"cache[{key!r}]", attempt))
            continue
        attempts.append(attempt)
        if first_stamp is None and isinstance(entry.get("timestamp"), str):
            first_stamp = entry["timestamp"]
    if not attempts:
        raise FormatMismatchError(path, _no_usable_entry(doc["cache"], keys, rejects))
    yield from rejects
    problem_size = doc.get("problem_size")
    coverage, coverage_basis = kerneltuner_coverage(declared, keys, [a.params for a in attempts])
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=source_label(path, digest),
        task=TaskSpec(
            op=op_name(kernel_name),
            kernel=kernel_name,
            signature={"problem_size": problem_size, "tune_params_keys": list(keys)},
        ),
        context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=chip.raw),
        attempts=attempts,
        evidence={
            "tool": "kernel_tuner",
            "objective": doc.get("objective", "time"),
            "tune_params": doc.get("tune_params"),
            "measured_at": first_stamp,
            "chip_from": chip_from,
            "path": str(path),
            "coverage_basis": coverage_basis,
            **({"open_cache": True} if was_open else {}),
        },
        provenance=Provenance(origin="recorded", coverage=coverage),
    )


def _no_usable_entry(cache: dict[str, Any], keys: list[str], rejects: list[RejectedRecord]) -> str:
    """Why a cache gave no attempt, once for the file: when no entry is usable, the layout is
    one this reader does not know (a newer Kernel Tuner's, say), and a reject per entry would
    hide that."""
    if not cache:
        return "the cache holds no usable configuration (it has no entries yet)"
    first_key, first = next(iter(cache.items()))
    fields = sorted(first)[:12] if isinstance(first, dict) else type(first).__name__
    return (
        f"the cache holds no usable configuration: an unrecognised layout, none of its "
        f"{len(cache)} entries is usable (the first, {first_key!r}: {rejects[0].reason}; its "
        f"fields: {fields}; the parameters expected: {keys}); if a newer Kernel Tuner wrote "
        "it, please report its layout"
    )


def _load_cache(path: Path, max_bytes: int) -> tuple[Any, str, bool]:
    """The cache document, its digest, and whether it was open (closed here as Kernel Tuner's
    `correct_open_cache` closes it: the trailing comma dropped, the two braces added)."""
    try:
        doc, digest = load_json(path, max_bytes)
        return doc, digest, False
    except FileUnreadableError as unreadable:
        blob = read_bytes(path, max_bytes)
        text = blob.rstrip()
        if not text.startswith(b"{") or text.endswith(b"}\n}") or text.endswith(b"}}"):
            raise
        closed = (text[:-1] if text.endswith(b",") else text) + b"}\n}"
        try:
            doc = parse_json(closed)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise unreadable from None
        return doc, hashlib.sha256(blob).hexdigest()[:12], True


def _key_value(part: str, declared: Sequence[Any] | None) -> Any:
    """One value of a cache key: the declared value it spells, else a JSON number, else text."""
    for value in declared if isinstance(declared, list) else ():
        if str(value) == part:
            return value
    try:
        parsed = json.loads(part)
    except ValueError:
        return part
    return parsed if isinstance(parsed, int | float) and not isinstance(parsed, bool) else part


def entry_params(
    key: str, entry: Mapping[str, Any], keys: Sequence[str], declared: Mapping[str, Any]
) -> dict[str, Any] | str:
    """The tuning parameters of one cache entry, or the reason they cannot be had.

    Entries that hold every parameter give them directly; entries that hold none of them (older
    Kernel Tuner versions) give them from the key, one comma-separated value per parameter in
    `keys` order; an entry with some but not all parameters is malformed.
    """
    present = [k for k in keys if k in entry]
    if len(present) == len(keys):
        return {k: entry[k] for k in keys}
    if present:
        missing = next(k for k in keys if k not in entry)
        return f"entry lacks tuning parameter {missing!r}"
    parts = str(key).split(",")
    if len(parts) != len(keys):
        return (
            f"entry holds no tuning parameters and its key has {len(parts)} values "
            f"for {len(keys)} parameters"
        )
    return {
        name: _key_value(part, declared.get(name)) for name, part in zip(keys, parts, strict=True)
    }


def numeric_parameters(declared: Mapping[str, Any]) -> frozenset[str]:
    """The parameters whose declared values are all numbers."""
    return frozenset(
        name
        for name, options in declared.items()
        if isinstance(options, list) and options and all(is_number(v) for v in options)
    )


def values_problem(params: Mapping[str, Any], numeric: frozenset[str]) -> str | None:
    """Why an entry's parameter values are not a configuration: every value is a scalar (a
    number, or text where the parameter's declared values are not all numbers); None when
    they are."""
    for name, value in params.items():
        if value is None or isinstance(value, list | dict):
            kind = "null" if value is None else "a list" if isinstance(value, list) else "an object"
            return f"tuning parameter {name!r} is {kind}; Kernel Tuner values are scalars"
        if name in numeric and not is_number(value):
            return (
                f"tuning parameter {name!r} is {str(value)[:40]!r} where its declared values "
                "are numbers"
            )
    return None


def _attempt(
    index: int,
    keys: list[str],
    key: str,
    entry: Any,
    declared: Mapping[str, Any],
    numeric: frozenset[str],
) -> AttemptRecord | str:
    """One cache entry as an attempt, or the reason it is rejected."""
    if not isinstance(entry, dict):
        return "entry is not an object"
    params = entry_params(key, entry, keys, declared)
    if isinstance(params, str):
        return params
    problem = json_problem(params, "parameters") or values_problem(params, numeric)
    if problem:
        return problem
    time = entry.get("time")
    if isinstance(time, str):
        return AttemptRecord(
            index=index,
            params=params,
            compiled=not time.startswith("Compil"),
            correct=None,
            error_category=failure_category(time),
            error=time,
        )
    if not is_number(time):
        return f"'time' is neither a number nor a failure marker: {str(time)[:80]!r}"
    problem = latency_problem("'time'", time)
    if problem:
        return problem
    times = entry.get("times")
    fastest = _fastest(times)
    metrics = {m: v for m in _METRIC_KEYS if (v := finite(entry.get(m))) is not None}
    if "compile_time" in metrics:
        metrics["compile_time_ms"] = metrics.pop("compile_time")
    if "verification_time" in metrics:
        metrics["verification_time_ms"] = metrics.pop("verification_time")
    return AttemptRecord(
        index=index,
        params=params,
        latency_ms=float(time),
        latency_min_ms=fastest,
        repetitions=len(times) if fastest is not None and times is not None else None,
        metrics=metrics,
    )


def _fastest(times: Any) -> float | None:
    """min(times) when `times` is a non-empty list of numbers (checked cheaply: hot path)."""
    if not isinstance(times, list) or not times:
        return None
    try:
        fastest = min(times)
    except TypeError:
        return None
    if not is_number(max(times)) or latency_problem("times", fastest) is not None:
        return None
    return float(fastest)
