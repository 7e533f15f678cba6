"""Helion autotune logs (`HELION_AUTOTUNE_LOG=<base>`): one trajectory per autotune run.

Helion (>= 1.4) writes `<base>.csv`, one row per configuration it timed
(`run_id,timestamp_s,config_id,generation,status,perf_ms,compile_time_s,config`), and with
`HELION_AUTOTUNE_LOG_DETAILS=1` a sidecar `<base>.meta.jsonl`, one JSON line per run:
`run_id`, `kernel_name`, `input_shapes` (`"[(2048, 2048), (2048, 2048)]"`), `dtypes`,
`hardware` (the device name), `settings` and `configs` (`config_id` -> the configuration).
Runs sharing a base path append to both files; rows join their run by `run_id` and their
configuration by `config_id`. Without the sidecar the `config` column (`Config(...)`'s text)
is parsed as literals, and the run's kernel, shapes and device are unknown.

Statuses: `ok` rows with a time are measurements; `error` and `timeout` are failures;
`started`, `filtered` and `deduplicated` rows were never timed and are left out.

A Helion configuration holds lists (`block_sizes`, `indexing`, ...) while the memory's
parameters are scalars: `flatten_config` turns a list `name` into `name[]` (its length) and
`name[0]`, `name[1]`, ..., losslessly (`unflatten_config` is its inverse).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import FileUnreadableError, FormatMismatchError
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import (
    DEFAULT_MAX_FILE_BYTES,
    digest_of,
    head,
    read_bytes,
    source_label,
)
from tunemem.ingest.validate import json_problem, latency_problem

FORMAT = "helion-autotune"
HEADER = "run_id,timestamp_s,config_id,generation,status,perf_ms,compile_time_s,config"
META_SUFFIX = ".meta.jsonl"
_UNTIMED = frozenset({"started", "filtered", "deduplicated"})
_FAILED = {"error": "other", "timeout": "timeout"}
_LENGTH = "[]"
# A list in a Helion configuration is a handful of items; past this a length is not one.
MAX_LIST = 4096


def detect(path: Path) -> bool:
    """A `.csv` file whose first line is Helion's autotune log header."""
    if not (path.is_file() and path.name.endswith(".csv")):
        return False
    first = head(path, 256).split(b"\n", 1)[0].strip()
    return first.decode("utf-8", "replace") == HEADER


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield the rows' rejects, then one trajectory per run in the log."""
    blob = read_bytes(path, max_bytes)
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileUnreadableError(path, f"not UTF-8 text: {exc}") from exc
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows and not text.startswith(HEADER):
        raise FormatMismatchError(path, "not a Helion autotune log (header differs)")
    meta_path = path.with_name(path.name[: -len(".csv")] + META_SUFFIX)
    meta_blob = read_bytes(meta_path, max_bytes) if meta_path.is_file() else b""
    runs, configs, meta_rejects = _read_meta(meta_path, meta_blob)
    yield from meta_rejects
    digest = digest_of([blob, meta_blob])

    grouped: dict[str, list[tuple[int, dict[str, str]]]] = {}
    for line, row in enumerate(rows, start=2):
        grouped.setdefault(row.get("run_id") or "", []).append((line, row))
    for run_id, run_rows in grouped.items():
        attempts: list[AttemptRecord] = []
        for line, row in run_rows:
            attempt = _attempt(len(attempts), row, configs)
            if attempt is None:
                continue
            if isinstance(attempt, str):
                yield RejectedRecord(str(path), f"line {line}", attempt)
                continue
            attempts.append(attempt)
        if not attempts:
            yield RejectedRecord(str(path), f"run {run_id[:16] or '?'}", "no timed configuration")
            continue
        yield _trajectory(path, digest, run_id, runs.get(run_id, {}), attempts)


def _read_meta(
    meta_path: Path, blob: bytes
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[RejectedRecord]]:
    """Runs by id, configurations by id, and the sidecar's bad lines as rejects."""
    runs: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any]] = {}
    rejects: list[RejectedRecord] = []
    for number, line in enumerate(blob.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            rejects.append(RejectedRecord(str(meta_path), f"line {number}", f"not JSON: {exc}"))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("run_id"), str):
            rejects.append(RejectedRecord(str(meta_path), f"line {number}", "no run_id"))
            continue
        runs.setdefault(record["run_id"], record)
        found = record.get("configs")
        if isinstance(found, dict):
            configs.update({k: v for k, v in found.items() if isinstance(v, dict)})
    return runs, configs, rejects


def _attempt(
    index: int, row: Mapping[str, str], configs: Mapping[str, dict[str, Any]]
) -> AttemptRecord | str | None:
    status = (row.get("status") or "").strip()
    if status in _UNTIMED:
        return None
    config = configs.get(row.get("config_id") or "")
    if config is None:
        config = parse_config_text(row.get("config") or "")
        if config is None:
            return f"configuration unreadable: {(row.get('config') or '')[:80]!r}"
    try:
        params = flatten_config(config)
    except ValueError as exc:
        return str(exc)
    problem = json_problem(params, "config")
    if problem:
        return problem
    metrics: dict[str, float] = {}
    compile_s = _number(row.get("compile_time_s"))
    if compile_s is not None:
        metrics["compile_time_s"] = compile_s
    generation = _number(row.get("generation"))
    if generation is not None:
        metrics["generation"] = generation
    if status in _FAILED:
        return AttemptRecord(
            index=index,
            params=params,
            compiled=False,
            correct=None,
            error_category=_FAILED[status],
            error=f"Helion autotune status {status}",
            metrics=metrics,
        )
    if status != "ok":
        return f"unknown status {status[:40]!r}"
    latency = _number(row.get("perf_ms"))
    if latency is None:
        return "status ok without a time"
    problem = latency_problem("perf_ms", latency)
    if problem:
        return problem
    return AttemptRecord(index=index, params=params, latency_ms=latency, metrics=metrics)


def _trajectory(
    path: Path, digest: str, run_id: str, run: Mapping[str, Any], attempts: list[AttemptRecord]
) -> TrajectoryRecord:
    kernel = run.get("kernel_name") if isinstance(run.get("kernel_name"), str) else None
    kernel = kernel or path.name[: -len(".csv")]
    shapes = parse_shapes(run.get("input_shapes"))
    dtypes = _literal(run.get("dtypes"))
    dtype_list = (
        [d.removeprefix("torch.") for d in dtypes if isinstance(d, str)]
        if isinstance(dtypes, list)
        else []
    )
    chip = chip_context(run.get("hardware"))
    found = run.get("settings")
    settings: dict[str, Any] = found if isinstance(found, dict) else {}
    signature: dict[str, Any] = {}
    if shapes is not None:
        signature = {
            "shape": [d for shape in shapes for d in shape],
            "input_shapes": [list(s) for s in shapes],
        }
    evidence: dict[str, Any] = {
        "tool": "helion",
        "run_id": run_id,
        "timings": "Helion's own benchmark of each configuration during the search (ms)",
        "path": str(path),
        "has_meta": bool(run),
    }
    for name in ("autotune_effort", "autotune_random_seed", "autotune_max_generations"):
        value = settings.get(name)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            evidence[name] = value
    return TrajectoryRecord(
        source_format=FORMAT,
        source=f"{source_label(path, digest)}#{run_id[:16]}",
        task=TaskSpec(
            op=kernel,
            kernel=kernel,
            signature=signature,
            dtype=dtype_list[0] if dtype_list else None,
        ),
        context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=chip.raw),
        attempts=attempts,
        evidence=evidence,
    )


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _literal(text: Any) -> Any:
    if not isinstance(text, str) or len(text) > 100_000:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_shapes(text: Any) -> list[list[int]] | None:
    """Helion's `input_shapes` text ("[(2048, 2048), (2048,)]") as lists of ints; None if not."""
    value = _literal(text)
    if not isinstance(value, list | tuple):
        return None
    shapes = []
    for shape in value:
        if not isinstance(shape, list | tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape
        ):
            return None
        shapes.append([int(d) for d in shape])
    return shapes


def parse_config_text(text: str) -> dict[str, Any] | None:
    """A configuration from its text (`Config(block_sizes=[64], num_warps=4)`), literals only."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args:
        return None
    out: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        try:
            out[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError):
            return None
    return out


def flatten_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A Helion configuration (`Config.config`) as scalar parameters, losslessly.

    Raises:
        ValueError: a value is an object, or a list is longer than `MAX_LIST`.
    """
    flat: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, list | tuple):
            if len(value) > MAX_LIST:
                raise ValueError(f"{name}: a list of {len(value)} items")
            flat[name + _LENGTH] = len(value)
            for i, item in enumerate(value):
                put(f"{name}[{i}]", item)
        elif isinstance(value, dict):
            raise ValueError(f"{name}: an object is not a Helion configuration value")
        else:
            flat[name] = value

    for name, value in config.items():
        put(str(name), value)
    return flat


def unflatten_config(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The Helion configuration that `flatten_config` gave `flat` for.

    Raises:
        ValueError: a list's length or one of its items is missing or malformed.
    """
    lists = {name[: -len(_LENGTH)] for name in flat if name.endswith(_LENGTH)}

    def build(name: str) -> Any:
        if name not in lists:
            if name not in flat:
                raise ValueError(f"{name}: missing")
            return flat[name]
        length = flat[name + _LENGTH]
        if isinstance(length, bool) or not isinstance(length, int) or not 0 <= length <= MAX_LIST:
            raise ValueError(f"{name}{_LENGTH}: not a list length")
        return [build(f"{name}[{i}]") for i in range(length)]

    tops = {name[: -len(_LENGTH)] if name.endswith(_LENGTH) else name for name in flat}
    return {name: build(name) for name in sorted(tops) if "[" not in name}
