"""KernelBench baseline timing JSON: one trajectory per problem per GPU folder.

KernelBench's `results/timing/<GPU>/baseline_time_<mode>.json` files hold, per level and per
problem file, the mean/std/min/max latency (ms) over `num_trials` runs of the PyTorch reference
in one mode: `baseline_time_torch.json` is eager, `baseline_time_torch_compile_inductor_default
.json` is torch.compile with the inductor backend in its default mode, and so on.

Given a GPU folder, the reader joins its mode files: each problem becomes a trajectory (op = the
problem name, e.g. "square_matrix_multiplication"; signature = level, problem id and file) whose
attempts are the modes (params {"mode": ...}), eager first, with `baseline_latency_ms` = eager.
So distillation says which mode is fastest for which problem on which GPU. Given a single file,
only that mode is read (one attempt per problem).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import FormatMismatchError
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES, finite, head, is_number, load_json
from tunemem.ingest.validate import latency_problem

FORMAT = "kernelbench-timing"
FOLDER = True

_FILE = re.compile(r"^baseline_time_(?P<mode>[\w.-]+)\.json$")
_LEVEL_START = re.compile(rb'^\s*\{\s*"level')
_PROBLEM = re.compile(r"^(?P<id>\d{1,18})_(?P<name>.+?)\.py$")


def mode_name(file_mode: str) -> str:
    """ "torch" -> "eager"; "torch_compile_inductor_default" -> "torch.compile inductor default"."""
    if file_mode == "torch":
        return "eager"
    if file_mode.startswith("torch_compile_"):
        return "torch.compile " + " ".join(file_mode[len("torch_compile_") :].split("_"))
    return file_mode.replace("_", " ")


def _mode_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = [p for p in path.iterdir() if _FILE.match(p.name)]
    else:
        files = [path]
    # Eager first, then the other modes by name.
    return sorted(files, key=lambda p: (p.name != "baseline_time_torch.json", p.name))


def detect(path: Path) -> bool:
    """A `baseline_time_*.json` file starting with a level key, or a folder of them."""
    if path.is_dir():
        return any(_FILE.match(p.name) and _detect_file(p) for p in path.iterdir())
    return _detect_file(path)


def _detect_file(path: Path) -> bool:
    return bool(_FILE.match(path.name)) and bool(_LEVEL_START.match(head(path, 256)))


def _problem_key(level: str, problem: str) -> tuple[int, int, str]:
    digits = level[5:]
    level_no = int(digits) if digits.isdecimal() and len(digits) <= 18 else 0
    match = _PROBLEM.match(problem)
    return (level_no, int(match["id"]) if match else 0, problem)


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield rejects for bad entries, then one trajectory per problem, by level and id."""
    files = _mode_files(path)
    if not files:
        raise FormatMismatchError(path, "no baseline_time_*.json file")
    hasher = hashlib.sha256()
    rows: dict[tuple[int, int, str], list[tuple[str, dict[str, Any]]]] = {}
    levels: dict[tuple[int, int, str], str] = {}
    for file in files:
        doc, digest = load_json(file, max_bytes)
        hasher.update(digest.encode())
        if not isinstance(doc, dict):
            raise FormatMismatchError(file, "not an object keyed by level")
        mode = mode_name(_FILE.match(file.name)["mode"])  # type: ignore[index]
        for level, problems in doc.items():
            if not isinstance(problems, dict):
                yield RejectedRecord(
                    str(file), level or repr(level), "level is not an object of problems"
                )
                continue
            for problem, entry in problems.items():
                if not isinstance(entry, dict) or not is_number(entry.get("mean")):
                    yield RejectedRecord(str(file), f"{level}/{problem}", "no numeric 'mean'")
                    continue
                problem_text = latency_problem("'mean'", entry["mean"])
                if problem_text:
                    yield RejectedRecord(str(file), f"{level}/{problem}", problem_text)
                    continue
                key = _problem_key(level, problem)
                rows.setdefault(key, []).append((mode, entry))
                levels[key] = level
    gpu_folder = path if path.is_dir() else path.parent
    source = f"{gpu_folder.parent.name}/{gpu_folder.name}@{hasher.hexdigest()[:12]}"
    if not path.is_dir():
        source = f"{gpu_folder.name}/{path.name}@{hasher.hexdigest()[:12]}"
    for key in sorted(rows):
        yield _trajectory(source, gpu_folder.name, levels[key], key, rows[key])


def _trajectory(
    source: str,
    gpu_folder: str,
    level: str,
    key: tuple[int, int, str],
    modes: list[tuple[str, dict[str, Any]]],
) -> TrajectoryRecord:
    level_no, problem_id, problem = key
    match = _PROBLEM.match(problem)
    name = (match["name"] if match else problem.removesuffix(".py")).strip("_").lower()
    hardware = next(
        (e["hardware"] for _, e in modes if isinstance(e.get("hardware"), str) and e["hardware"]),
        None,
    )
    # "hardware" is torch's device name; older files lack it, then the folder ("A100_modal").
    chip = chip_context(hardware) if hardware else chip_context(gpu_folder)
    attempts = []
    for index, (mode, entry) in enumerate(modes):
        metrics = {f"{k}_ms": v for k in ("std", "max") if (v := finite(entry.get(k))) is not None}
        fastest = finite(entry.get("min"))
        trials = finite(entry.get("num_trials"))
        attempts.append(
            AttemptRecord(
                index=index,
                params={"mode": mode},
                latency_ms=float(entry["mean"]),
                latency_min_ms=fastest if latency_problem("min", fastest) is None else None,
                repetitions=int(trials) if trials is not None and 0 <= trials < 2**62 else None,
                metrics=metrics,
            )
        )
    eager = next((a.latency_ms for a in attempts if a.params["mode"] == "eager"), None)
    return TrajectoryRecord(
        source_format=FORMAT,
        source=source,
        task=TaskSpec(
            op=name,
            kernel=problem,
            signature={"level": level_no, "problem_id": problem_id, "problem": problem},
        ),
        context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=hardware),
        attempts=attempts,
        baseline_latency_ms=eager,
        evidence={"tool": "kernelbench timing", "gpu_folder": gpu_folder, "level": level},
    )
