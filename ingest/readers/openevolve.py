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

from ingest.chips import chip_context
from ingest.errors import FormatMismatchError
from ingest.records import AttemptRecord, ContextSpec, RejectedRecord, TaskSpec, TrajectoryRecord
from ingest.sources import digest_of, is_number

FORMAT = "openevolve"
FOLDER = True
LATENCY_METRICS = ("latency_ms", "runtime_ms", "runtime")


def detect(path: Path) -> bool:
    """A folder with a `programs/` folder of `*.json`."""
    programs = path / "programs"
    return path.is_dir() and programs.is_dir() and any(programs.glob("*.json"))


def _run_name(path: Path) -> str:
    return path.parent.parent.name if path.parent.name == "checkpoints" else path.parent.name


def read(path: Path) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield rejects for unreadable programs, then the checkpoint's trajectory."""
    if not detect(path):
        raise FormatMismatchError(path, "no programs/*.json in this folder")
    meta: dict[str, Any] = {}
    meta_path = path / "metadata.json"
    if meta_path.is_file():
        try:
            loaded = json.loads(meta_path.read_text(encoding="utf-8"))
            meta = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            yield RejectedRecord(str(meta_path), "file", "metadata.json is not valid JSON")
    programs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for file in sorted((path / "programs").glob("*.json")):
        blob = file.read_bytes()
        try:
            program = json.loads(blob)
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
    chip = chip_context(str(device) if device else None)
    op = str(meta.get("op") or meta.get("task") or _run_name(path))
    language = programs[0].get("language")
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=f"{_run_name(path)}/{path.name}@{digest_of(blobs)}",
        task=TaskSpec(
            op=op, kernel=meta.get("kernel"), signature=dict(meta.get("signature") or {})
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
    return int(value) if is_number(value) else 0


def _attempt(index: int, program: dict[str, Any], metric_key: str | None) -> AttemptRecord:
    metrics_in = program.get("metrics") or {}
    metrics = {k: float(v) for k, v in metrics_in.items() if is_number(v)}
    error = metrics_in.get("error") or (program.get("metadata") or {}).get("error")
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
