"""The harness's own sweep: walk a task's tuning space over shapes on a runner.

Each (task, shape) becomes one `TrajectoryRecord` in tunemem's native format: the attempts in
the order they ran, the context (chip from `platforms`, toolchain versions, model and
scenario where the shape comes from one) and the evidence of how it was measured.
"""

from __future__ import annotations

import json
import platform as host_platform
import random
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tunemem.ingest.records import ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.kernels.evidence import chip_identity, template_hash, toolchain_versions
from tunemem.kernels.harness import HARNESS_VERSION
from tunemem.kernels.runners.base import EvalResult, Runner
from tunemem.kernels.tasks.base import KernelTask, ShapeCase

SOURCE_PREFIX = "tunemem-kernels-sweep"


def candidate_configs(
    task: KernelTask,
    dims: dict[str, int],
    space: dict[str, list[Any]] | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Valid configurations of a space for these dims, in grid order, sampled down to `limit`."""
    valid = [c for c in task.configs(space or task.tuning_space) if task.valid(c, dims)]
    if limit is None or len(valid) <= limit:
        return valid
    keep = sorted(random.Random(seed).sample(range(len(valid)), limit))
    return [valid[i] for i in keep]


def sweep_shape(
    task: KernelTask,
    case: ShapeCase,
    runner: Runner,
    configs: list[dict[str, Any]],
    *,
    device_name: str,
    dtype: str,
    run_id: str,
    deadline: float | None = None,
    baseline_latency_ms: float | None = None,
    on_attempt: Callable[[int, dict[str, Any], EvalResult], None] | None = None,
) -> TrajectoryRecord:
    """Evaluate configurations in order (stopping at `deadline`, a time.monotonic() value)."""
    chip, backend = chip_identity(device_name)
    attempts = []
    for index, config in enumerate(configs):
        if deadline is not None and time.monotonic() > deadline:
            break
        result = runner.evaluate(config)
        attempts.append(result.to_attempt(index, config))
        if on_attempt is not None:
            on_attempt(index, config, result)
    return TrajectoryRecord(
        source_format="native",
        source=f"{SOURCE_PREFIX}/{task.name}/{case.name}@{run_id}",
        task=TaskSpec(
            op=task.op, kernel=task.kernel, signature={**case.dims, "dtype": dtype}, dtype=dtype
        ),
        context=ContextSpec(
            chip=chip,
            backend=backend,
            chip_raw=device_name,
            model=case.model,
            scenario=case.scenario,
            toolchain=toolchain_versions(),
        ),
        attempts=attempts,
        baseline_latency_ms=baseline_latency_ms,
        evidence={
            "harness_version": HARNESS_VERSION,
            "template_hash": template_hash(task),
            "runner": runner.name,
            "gpu": device_name,
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "shape_name": case.name,
            "configs_planned": len(configs),
            "configs_tried": len(attempts),
            "baseline": "torch eager median latency" if baseline_latency_ms else None,
            "latency_ms": "mean of do_bench runs; metrics hold median and percentiles",
            "host": host_platform.node(),
        },
        synthetic=False,
    )


def new_run_id() -> str:
    """A UTC timestamp naming one sweep run (part of every trajectory's source)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def write_trajectories(records: Iterable[TrajectoryRecord], path: Path) -> int:
    """Write records as native JSON lines; returns how many.

    Each line is `TrajectoryRecord.to_dict()` with "version" and "source_format" leading, so
    the native reader's format detection (which reads only the first 4 KiB) finds them even
    when a trajectory holds many attempts.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            data = record.to_dict()
            line = {"version": data.pop("version"), "source_format": data.pop("source_format")}
            handle.write(json.dumps({**line, **data}, separators=(",", ":"), default=str) + "\n")
            count += 1
    return count


def read_trajectories(path: Path) -> list[TrajectoryRecord]:
    """Read records written by `write_trajectories`."""
    with path.open() as handle:
        return [TrajectoryRecord.from_dict(json.loads(line)) for line in handle if line.strip()]


def best_attempt(record: TrajectoryRecord) -> Any:
    """The feasible attempt with the lowest median latency, or None."""
    timed = [a for a in record.attempts if a.feasible and a.latency_ms is not None]
    if not timed:
        return None
    return min(timed, key=lambda a: a.metrics.get("latency_median_ms", a.latency_ms or 0.0))
