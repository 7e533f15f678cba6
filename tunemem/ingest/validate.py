"""Checks that a canonical record is safe to store, distil and serve back as JSON.

Readers check the records they build as they go; `record_problem` is the last check that
`read_any` (and the HTTP upload of native trajectories) applies to every trajectory, whatever
its origin: field types, latencies that are finite and plausible (1e-9..1e9 ms, the bounds
`/v1/outcomes` keeps), parameter values that are scalars (a string, a finite number, a boolean
or null: never a list or an object, which no search space holds), and free JSON (signature,
evidence, metrics) that holds only strings, finite numbers, booleans and null, nested at most
`MAX_JSON_DEPTH` levels, and text that every store can keep and read back (no NUL, no lone
UTF-16 surrogate, anywhere in the record). A record that passes can always be written as strict
JSON. `hint_problem` holds a lesson hint to the shapes the suggester reads.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from tunemem.ingest.provenance import device_contradiction, provenance_problem
from tunemem.ingest.records import ERROR_CATEGORIES, AttemptRecord, TrajectoryRecord
from tunemem.ingest.sources import is_number

# 1e9 ms is 11.6 days: no kernel measurement is longer; larger values are failure sentinels
# (1e20, 1e308) or corruption, and the ratios the distiller prints would overflow on them.
MAX_LATENCY_MS = 1e9
# Below a picosecond no kernel runs: 0 and 1e-300 are failure markers or corruption, and their
# logarithm would swamp a performance model.
MIN_LATENCY_MS = 1e-9
MAX_STATISTIC = 1e300  # a hint's statistic beyond this is not a measurement
MAX_JSON_DEPTH = 32
MAX_PARAMS = 256


def latency_problem(name: str, value: Any) -> str | None:
    """Why `value` is not a usable latency in ms (None, or a finite 1e-9 <= x <= 1e9, is)."""
    if value is None:
        return None
    if not is_number(value):
        return f"{name} is not a number: {str(value)[:80]!r}"
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < MIN_LATENCY_MS or number > MAX_LATENCY_MS:
        return (
            f"{name} {value!r} is not a latency in ms between {MIN_LATENCY_MS:g} and "
            f"{MAX_LATENCY_MS:g}"
        )
    return None


def scalar_problem(value: Any, at: str) -> str | None:
    """Why `value` is not a parameter value (a string, a finite number within 64 bits, a boolean
    or null); None when it is."""
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return None if -(2**63) < value < 2**63 else f"{at} is an integer beyond 64 bits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{at} is {value!r}, not a finite number"
    return f"{at} is a {type(value).__name__}, not a parameter value (a scalar)"


def _number_problem(value: Any, at: str) -> str | None:
    if value is None or (is_number(value) and abs(value) < MAX_STATISTIC):
        return None
    return f"{at} is not a finite number: {str(value)[:80]!r}"


def hint_problem(hint: Any, at: str = "hint") -> str | None:
    """Why a lesson hint cannot be read by the suggester; None when it can. The parts it reads
    (any may be absent): `config` and `avoid`, objects of parameter values; `param`, a name,
    with `value`, a parameter value, and `effect`, prefer or avoid; `median_speedup` and
    `failure_rate`, numbers. Other keys are free."""
    if not isinstance(hint, dict):
        return f"{at} must be an object"
    for part in ("config", "avoid"):
        if part in hint:
            config = hint[part]
            if not isinstance(config, dict):
                return f"{at}.{part} must be an object of parameter values"
            for name, value in config.items():
                problem = scalar_problem(value, f"{at}.{part}.{name}")
                if problem:
                    return problem
    if "param" in hint and not isinstance(hint["param"], str):
        return f"{at}.param must be a parameter name (a string)"
    if "value" in hint:
        problem = scalar_problem(hint["value"], f"{at}.value")
        if problem:
            return problem
    if "effect" in hint and hint["effect"] not in ("prefer", "avoid"):
        return f"{at}.effect must be prefer or avoid"
    for name in ("median_speedup", "failure_rate"):
        problem = _number_problem(hint.get(name), f"{at}.{name}")
        if problem:
            return problem
    return None


def text_problem(value: str, at: str) -> str | None:
    """Why a string cannot be stored and read back as text (by SQLite, PostgreSQL and a JSON
    response alike): a NUL character, or a lone UTF-16 surrogate; None when it can."""
    if "\x00" in value:
        return f"{at} holds a NUL character (U+0000), which cannot be stored"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{at} holds a lone UTF-16 surrogate, which is not text"
    return None


def _plain_text(value: str) -> bool:
    return value.isascii() and "\x00" not in value


def _dataclass_fields(item: Any) -> dict[str, Any]:
    if hasattr(item, "__dataclass_fields__"):
        return {name: getattr(item, name) for name in item.__dataclass_fields__}
    raise TypeError(f"{type(item).__name__} is not walked")


def _all_text(value: Any) -> bool:
    """True when every string in `value` is text for `text_problem`, found at C speed: orjson
    writes every dict, list, tuple and dataclass field (each one through `_dataclass_fields`)
    and refuses a lone surrogate; a NUL comes out as an escape. False means "look closer":
    a problem, or something orjson does not write (the walk in `strings_problem` decides)."""
    try:
        blob = orjson.dumps(
            value,
            default=_dataclass_fields,
            option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS,
        )
    except (TypeError, orjson.JSONEncodeError):
        return False
    return b"\\u0000" not in blob


def strings_problem(value: Any, at: str) -> str | None:
    """The first string (key or value) anywhere in `value` that `text_problem` refuses.

    Walks dicts, lists, tuples and dataclasses (records), so a whole request or record is
    checked in one call whatever its shape. The common case, all text, is answered by
    `_all_text` (the walk was half of reading ../shared/data); the walk names the place."""
    return None if _all_text(value) else _walk_problem(value, at)


def _walk_problem(value: Any, at: str) -> str | None:
    stack: list[tuple[Any, str]] = [(value, at)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not _plain_text(item):
                problem = text_problem(item, where)
                if problem:
                    return problem
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str) and not _plain_text(key):
                    problem = text_problem(key, f"{where} key {key[:40]!r}")
                    if problem:
                        return problem
                stack.append((inner, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((inner, f"{where}[{i}]") for i, inner in enumerate(item))
        elif hasattr(item, "__dataclass_fields__"):
            stack.extend(
                (getattr(item, name), f"{where}.{name}") for name in item.__dataclass_fields__
            )
    return None


def _flat_scalars(value: dict[Any, Any]) -> bool:
    """True for an object of string keys and plain scalars: the common case, checked fast."""
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str or not _plain_text(key):
            return False
        if kind is str:
            if not _plain_text(item):
                return False
            continue
        if kind is bool or item is None:
            continue
        if kind is float:
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return False
        elif kind is not int or not -(2**63) < item < 2**63:
            return False
    return True


def json_problem(value: Any, where: str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why `value` is not plain, strict JSON of bounded depth; None when it is."""
    if type(value) is dict and _flat_scalars(value):
        return None
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack:
        item, at, depth = stack.pop()
        if depth > max_depth:
            return f"{at} is nested deeper than {max_depth} levels"
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return f"{at} has a non-string key {key!r}"
                problem = text_problem(key, f"{at} key {key[:40]!r}")
                if problem:
                    return problem
                stack.append((inner, f"{at}.{key}", depth + 1))
        elif isinstance(item, str):
            problem = text_problem(item, at)
            if problem:
                return problem
        elif isinstance(item, list | tuple):
            stack.extend((inner, f"{at}[{i}]", depth + 1) for i, inner in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{at} is {item!r}, which JSON cannot carry"
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
            return f"{at} is an integer beyond 64 bits"
        elif not (item is None or isinstance(item, str | int | float | bool)):
            return f"{at} is a {type(item).__name__}, not JSON"
    return None


def _optional(value: Any, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def attempt_problem(attempt: AttemptRecord, at: str) -> str | None:
    """Why one attempt is unusable; None when it is fine."""
    if not isinstance(attempt, AttemptRecord):
        return f"{at} is not an attempt"
    if not isinstance(attempt.index, int) or isinstance(attempt.index, bool):
        return f"{at}.index is not an integer"
    if not isinstance(attempt.params, dict) or len(attempt.params) > MAX_PARAMS:
        return f"{at}.params must be an object of at most {MAX_PARAMS} parameters"
    if not isinstance(attempt.compiled, bool) or not _optional(attempt.correct, bool):
        return f"{at}: compiled must be true/false and correct true/false/null"
    if attempt.error_category is not None and attempt.error_category not in ERROR_CATEGORIES:
        return f"{at}.error_category must be one of {', '.join(ERROR_CATEGORIES)} or null"
    if not _optional(attempt.code, str) or not _optional(attempt.error, str):
        return f"{at}: code and error must be strings or null"
    for name in ("latency_ms", "latency_min_ms"):
        problem = latency_problem(f"{at}.{name}", getattr(attempt, name))
        if problem:
            return problem
    reps = attempt.repetitions
    if reps is not None and (not isinstance(reps, int) or isinstance(reps, bool) or reps < 0):
        return f"{at}.repetitions must be a non-negative integer or null"
    if not isinstance(attempt.metrics, dict):
        return f"{at}.metrics must be an object"
    for name, value in attempt.params.items():
        problem = scalar_problem(value, f"{at}.params.{name}")
        if problem:
            return problem
    return json_problem(attempt.params, f"{at}.params") or json_problem(
        attempt.metrics, f"{at}.metrics", 2
    )


def _moe_shape_problem(op: str, signature: dict[str, Any]) -> str | None:
    """A fused-MoE layer of no experts or of no width is no shape (E, N positive integers)."""
    if op != "fused_moe":
        return None
    for name in ("E", "N"):
        value = signature.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            return f"task.signature.{name} of a fused-MoE layer must be a positive integer"
    return None


def record_problem(record: TrajectoryRecord) -> str | None:
    """Why a trajectory cannot be stored and distilled safely; None when it can."""
    task, ctx = record.task, record.context
    if not isinstance(record.source, str) or not isinstance(record.source_format, str):
        return "source and source_format must be strings"
    if not isinstance(task.op, str) or not task.op.strip():
        return "task.op must be a non-empty string"
    if not _optional(task.kernel, str) or not _optional(task.dtype, str):
        return "task.kernel and task.dtype must be strings or null"
    if not isinstance(task.signature, dict):
        return "task.signature must be an object"
    for name in ("chip", "backend"):
        value = getattr(ctx, name)
        if not isinstance(value, str) or not value.strip():
            return f"context.{name} must be a non-empty string"
    for name in ("chip_raw", "model", "scenario"):
        if not _optional(getattr(ctx, name), str):
            return f"context.{name} must be a string or null"
    if not isinstance(ctx.toolchain, dict) or not all(
        isinstance(v, str) for v in ctx.toolchain.values()
    ):
        return "context.toolchain must map names to version strings"
    if not isinstance(record.attempts, list):
        return "attempts must be a list"
    for i, attempt in enumerate(record.attempts):
        problem = attempt_problem(attempt, f"attempts[{i}]")
        if problem:
            return problem
    problem = latency_problem("baseline_latency_ms", record.baseline_latency_ms)
    if problem:
        return problem
    if not isinstance(record.evidence, dict) or not isinstance(record.synthetic, bool):
        return "evidence must be an object and synthetic true/false"
    return (
        _moe_shape_problem(task.op, task.signature)
        or provenance_problem(record.provenance)
        or device_contradiction(ctx.chip, record.provenance.device_reported)
        or json_problem(task.signature, "task.signature")
        or json_problem(record.evidence, "evidence")
        or json_problem(ctx.toolchain, "context.toolchain")
        or strings_problem(record, "trajectory")
    )
