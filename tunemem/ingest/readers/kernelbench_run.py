"""KernelBench run folders: one trajectory per problem, one attempt per generated sample.

A run folder holds `eval_results.json`, mapping problem id -> sample id -> {"compiled": bool,
"correctness": bool, "runtime": float (ms, -1 when not measured), "metadata": {...}}, and the
generated kernels as `level_<L>_problem_<P>_sample_<S>_kernel.py`. The reader is tolerant: a
problem may map straight to one result (sample 0), the level comes from the kernel file names
or the folder name ("level1"), and the device from `metadata["hardware"]` or
`metadata["device"]`. A sample that did not compile is a "compile" failure; one that compiled
but is not correct is "incorrect" (or "runtime" when the metadata records a runtime error).
"""

from __future__ import annotations

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
from tunemem.ingest.sources import (
    DEFAULT_MAX_FILE_BYTES,
    digest_of,
    is_number,
    load_json,
    read_bytes,
)
from tunemem.ingest.validate import latency_problem

FORMAT = "kernelbench-run"
FOLDER = True

RESULTS_FILE = "eval_results.json"
_KERNEL = re.compile(
    r"^level_(?P<level>\d+)_problem_(?P<problem>\d+)_sample_(?P<sample>\d+)_kernel\.py$"
)
_LEVEL_IN_NAME = re.compile(r"level_?(\d+)")


def detect(path: Path) -> bool:
    """A folder holding `eval_results.json`."""
    return path.is_dir() and (path / RESULTS_FILE).is_file()


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield rejects for bad samples, then one trajectory per problem, by problem id."""
    if not detect(path):
        raise FormatMismatchError(path, f"no {RESULTS_FILE} in this folder")
    results_path = path / RESULTS_FILE
    doc, digest = load_json(results_path, max_bytes)
    if not isinstance(doc, dict):
        raise FormatMismatchError(results_path, "not an object keyed by problem id")
    kernels = {
        (m["problem"], m["sample"]): (int(m["level"]), p)
        for p in sorted(path.iterdir())
        if (m := _KERNEL.match(p.name))
    }
    code_of = {p: read_bytes(p, max_bytes) for _, p in sorted(kernels.values())}
    kernel_bytes = list(code_of.values())
    source = f"{path.parent.name}/{path.name}@{digest_of([digest.encode(), *kernel_bytes])}"
    folder_level = _LEVEL_IN_NAME.search(path.name.lower())
    for problem in sorted(doc, key=lambda k: (len(str(k)), str(k))):
        samples = doc[problem]
        if isinstance(samples, dict) and "compiled" in samples:
            samples = {"0": samples}
        if not isinstance(samples, dict) or not samples:
            yield RejectedRecord(str(results_path), f"[{problem!r}]", "no samples")
            continue
        attempts: list[AttemptRecord] = []
        hardware = None
        level = int(folder_level.group(1)) if folder_level else None
        for sample in sorted(samples, key=lambda k: (len(str(k)), str(k))):
            result = samples[sample]
            if not isinstance(result, dict) or not isinstance(result.get("compiled"), bool):
                yield RejectedRecord(
                    str(results_path), f"[{problem!r}][{sample!r}]", "no boolean 'compiled'"
                )
                continue
            found = kernels.get((str(problem), str(sample)))
            if found:
                level = found[0]
            code = code_of[found[1]].decode("utf-8", errors="replace") if found else None
            metadata = _v if isinstance(_v := result.get("metadata"), dict) else {}
            named = metadata.get("hardware") or metadata.get("device")
            hardware = hardware or (named if isinstance(named, str) else None)
            attempts.append(_attempt(len(attempts), str(sample), result, metadata, code))
        if not attempts:
            continue
        chip = chip_context(str(hardware) if hardware else None)
        yield TrajectoryRecord(
            source_format=FORMAT,
            source=source,
            task=TaskSpec(
                op=f"kernelbench_level{level}_problem{problem}"
                if level
                else f"kernelbench_problem{problem}",
                kernel=f"level_{level}_problem_{problem}",
                signature={"level": level, "problem_id": str(problem)},
            ),
            context=ContextSpec(chip=chip.chip, backend=chip.backend, chip_raw=hardware),
            attempts=attempts,
            evidence={"tool": "kernelbench", "run": path.name, "tuning_params": []},
        )


def _attempt(
    index: int, sample: str, result: dict[str, Any], metadata: dict[str, Any], code: str | None
) -> AttemptRecord:
    compiled = result["compiled"]
    correct = bool(result.get("correctness", False)) if compiled else None
    runtime = result.get("runtime")
    latency = None
    if correct and is_number(runtime) and runtime >= 0 and not latency_problem("runtime", runtime):
        latency = float(runtime)
    category = None
    error = None
    if not compiled:
        category = "compile"
        error = str(metadata.get("compilation_error") or "compilation failed")
    elif not correct:
        runtime_error = metadata.get("runtime_error") or metadata.get("cuda_error")
        category = "runtime" if runtime_error else "incorrect"
        error = str(runtime_error or metadata.get("correctness_issue") or "output mismatch")
    return AttemptRecord(
        index=index,
        params={"sample_id": sample},
        code=code,
        compiled=compiled,
        correct=correct,
        error_category=category,
        error=error[:2000] if error else None,
        latency_ms=latency,
    )
