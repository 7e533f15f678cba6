"""OpenEvolve checkpoint folders: one trajectory per checkpoint, one attempt per program.

A checkpoint (`<output>/checkpoints/checkpoint_<n>/`) holds `programs/<id>.json`, each with
"id", "code", "language", "parent_id", "generation", "iteration_found", "metrics" (a dict of
evaluator results, e.g. "combined_score", "runtime", "correctness") and "metadata", plus an
optional `metadata.json`. Programs become attempts ordered by (iteration_found, generation, id),
their code kept, their lineage in params (not tuning parameters: `evidence["tuning_params"]`
is empty). Latency is taken from the first metric among "latency_ms", "runtime_ms", "runtime"
(assumed ms; the key used is in `evidence["latency_metric"]`); a program whose metrics say
correctness 0 or carry an "error" is infeasible. The operator is `metadata.json`'s "op" or
"task" if present, else the output folder's name; the chip is metadata's "chip"/"device".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import FormatMismatchError, ReaderError
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES, digest_of, finite, is_number, read_bytes
from tunemem.ingest.validate import latency_problem

FORMAT = "openevolve"
FOLDER = True
LATENCY_METRICS = ("latency_ms", "runtime_ms", "runtime")


def detect(path: Path) -> bool:
    """A folder with a `programs/` folder of `*.json`."""
    programs = path / "programs"
    return path.is_dir() and programs.is_dir() and any(programs.glob("*.json"))


def _run_name(path: Path) -> str:
    return path.parent.parent.name if path.parent.name == "checkpoints" else path.parent.name


def _parse(blob: bytes) -> Any:
    """JSON of one file; ValueError for bad or too deeply nested JSON."""
    try:
        return json.loads(blob)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply to parse") from exc


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield rejects for unreadable programs, then the checkpoint's trajectory."""
    if not detect(path):
        raise FormatMismatchError(path, "no programs/*.json in this folder")
    meta: dict[str, Any] = {}
    meta_path = path / "metadata.json"
    if meta_path.is_file():
        try:
            loaded = _parse(read_bytes(meta_path, max_bytes))
            meta = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            yield RejectedRecord(str(meta_path), "file", "metadata.json is not valid JSON")
        except ReaderError as exc:
            yield RejectedRecord(str(meta_path), "file", exc.reason)
    programs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for file in sorted((path / "programs").glob("*.json")):
        try:
            blob = read_bytes(file, max_bytes)
        except ReaderError as exc:
            yield RejectedRecord(str(file), "file", exc.reason)
            continue
        try:
            program = _parse(blob)
        except ValueError as exc:
            yield RejectedRecord(str(file), "file", f"not valid JSON: {exc}")
            continue
        if not isinstance(program, dict) or not isinstance(program.get("code"), str):
            yield RejectedRecord(str(file), "file", "program has no 'code' string")
            continue
        if not isinstance(program.get("metrics", {}), dict):
            yield RejectedRecord(str(file), "file", "'metrics' is not an object")
            continue
        programs.append(program)
        blobs.append(blob)
    if not programs:
        raise FormatMismatchError(path, "no usable program")
    programs.sort(
        key=lambda p: (_int(p.get("iteration_found")), _int(p.get("generation")), str(p.get("id")))
    )
    metric_key = next(
        (
            k
            for k in LATENCY_METRICS
            if any(is_number(p.get("metrics", {}).get(k)) for p in programs)
        ),
        None,
    )
    attempts = [_attempt(i, p, metric_key) for i, p in enumerate(programs)]
    device = meta.get("chip") or meta.get("device")
    device = str(device) if device else None
    chip = chip_context(device)
    op = str(meta.get("op") or meta.get("task") or _run_name(path))
    kernel = meta.get("kernel")
    signature = meta.get("signature")
    language = programs[0].get("language")
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=f"{_run_name(path)}/{path.name}@{digest_of(blobs)}",
        task=TaskSpec(
            op=op,
            kernel=kernel if isinstance(kernel, str) else None,
            signature=dict(signature) if isinstance(signature, dict) else {},
        ),
        context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=device),
        attempts=attempts,
        evidence={
            "tool": "openevolve",
            "checkpoint": path.name,
            "language": language,
            "best_program_id": meta.get("best_program_id"),
            "latency_metric": metric_key,
            "score_metric": "combined_score",
            "tuning_params": [],
        },
    )


def _int(value: Any) -> int:
    number = finite(value)
    return int(number) if number is not None else 0


def _attempt(index: int, program: dict[str, Any], metric_key: str | None) -> AttemptRecord:
    metrics_in = program.get("metrics") or {}
    numbers = {k: finite(v) for k, v in metrics_in.items()}
    metrics = {k: v for k, v in numbers.items() if v is not None}
    metadata = _v if isinstance(_v := program.get("metadata"), dict) else {}
    error = metrics_in.get("error") or metadata.get("error")
    correctness = metrics_in.get("correctness", metrics_in.get("correct"))
    compiled_flag = metrics_in.get("compiled")
    compiled = not (compiled_flag is False or compiled_flag == 0)
    correct = None if correctness is None else bool(correctness)
    category = None
    if not compiled:
        category = "compile"
    elif correct is False:
        category = "incorrect"
    elif error:
        category = "runtime"
    latency = metrics.get(metric_key) if metric_key and category is None else None
    if latency_problem("latency", latency):
        latency = None
    return AttemptRecord(
        index=index,
        params={
            "program_id": str(program.get("id")),
            "parent_id": program.get("parent_id"),
            "generation": program.get("generation"),
        },
        code=program["code"],
        compiled=compiled,
        correct=correct,
        error_category=category,
        error=str(error)[:2000] if error else None,
        latency_ms=latency,
        metrics=metrics,
    )
