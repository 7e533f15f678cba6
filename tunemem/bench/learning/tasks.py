"""Tuning tasks of the learning benchmark: Kernel Tuner caches grouped by parameter space.

A task is one (kernel family, chip) search space. A kernel family is an op together with its
parameter names: two caches of the same op with different tuning parameters (the old and the
new convolution) are different families, named apart (`family_name`), so neither a task's
sources nor the averages mix them. Two caches of one family on one chip with different problem sizes
are two tasks (`family/chip@size`).

A file that is not a Kernel Tuner cache is skipped (READMEs, T4 files); a Kernel Tuner cache
that yields no usable configuration is an error naming the file, never a traceback later.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunemem.ingest.readers import read_any
from tunemem.ingest.readers.kerneltuner import detect
from tunemem.ingest.records import TrajectoryRecord
from tunemem.kernels.runners.replay import Recording


class TaskDataError(ValueError):
    """A cache under the benchmark's folders cannot be used; the message names the file."""


@dataclass
class Task:
    """One recorded search space: its family, chip, recording and (read lazily) trajectory."""

    family: str
    chip: str
    path: Path
    recording: Recording
    name: str = ""
    _trajectory: TrajectoryRecord | None = field(default=None, repr=False)
    _exemplars: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def optimum_ms(self) -> float:
        return self.recording.best()[1]

    def trajectory(self) -> TrajectoryRecord:
        """The cache as the ingest reader sees it (what a finished campaign uploads)."""
        if self._trajectory is None:
            records = [r for r in read_any([self.path]) if isinstance(r, TrajectoryRecord)]
            if not records:
                raise TaskDataError(f"{self.path}: the cache yields no trajectory to ingest")
            self._trajectory = records[0]
        return self._trajectory

    def exemplar_configs(self) -> list[dict[str, Any]]:
        """The configurations of the exemplar lessons this cache distils into."""
        from tunemem.ingest.distill import distill

        if self._exemplars is None:
            configs = [
                (d.hint or {}).get("config")
                for d in distill(self.trajectory())
                if d.kind == "exemplar"
            ]
            self._exemplars = [dict(c) for c in configs if isinstance(c, dict)]
        return self._exemplars

    def fraction(self, config: dict[str, Any]) -> float:
        """The fraction of this space's optimum a configuration reaches (0 if not feasible)."""
        if set(config) != set(self.recording.param_names):
            return 0.0
        latency = self.recording.latency_of(config)
        return self.optimum_ms / latency if latency else 0.0


def _cache_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise TaskDataError(f"{root}: no such file or folder")
    return sorted(
        Path(folder) / name
        for folder, _, names in os.walk(root, followlinks=True)
        for name in names
        if name.endswith((".json", ".json.gz"))
    )


def family_name(op: str, keys: frozenset[str], spaces: set[frozenset[str]]) -> str:
    """The op alone when it has one parameter space here; else `op~<n>p` by parameter count,
    or `op~<hash>` of the parameter names when two spaces have the same count."""
    if len(spaces) == 1:
        return op
    if sum(1 for other in spaces if len(other) == len(keys)) == 1:
        return f"{op}~{len(keys)}p"
    return f"{op}~{hashlib.sha1(','.join(sorted(keys)).encode()).hexdigest()[:6]}"


def discover_tasks(paths: list[Path]) -> list[Task]:
    """Every Kernel Tuner cache under `paths` as a task, sorted by name.

    Raises:
        TaskDataError: a cache holds no usable configuration, or none was found at all.
    """
    found: list[tuple[str, frozenset[str], Any, Recording, Path]] = []
    for root in paths:
        for path in _cache_files(Path(root)):
            if not detect(path):
                continue
            try:
                recording = Recording(path)
                recording.best()
            except (ValueError, KeyError, json.JSONDecodeError) as exc:
                raise TaskDataError(f"{path}: not usable as a tuning task: {exc}") from exc
            problem = json.dumps(recording.task.signature.get("problem_size"))
            found.append(
                (recording.task.op, frozenset(recording.param_names), problem, recording, path)
            )
    if not found:
        raise TaskDataError(f"no Kernel Tuner cache found under {', '.join(map(str, paths))}")
    spaces: dict[str, set[frozenset[str]]] = {}
    for op, keys, *_ in found:
        spaces.setdefault(op, set()).add(keys)
    tasks: dict[str, Task] = {}
    for op, keys, problem, recording, path in found:
        family = family_name(op, keys, spaces[op])
        name = f"{family}/{recording.context.chip}"
        if name in tasks and tasks[name].path != path:
            name = f"{name}@{problem}"
        if name in tasks:
            raise TaskDataError(f"{path}: the same task as {tasks[name].path} ({name})")
        tasks[name] = Task(family, recording.context.chip, path, recording, name=name)
    return [tasks[name] for name in sorted(tasks)]


def naive_transfer(target: Task, sources: list[Task]) -> dict[str, float]:
    """Each source chip's best configuration tried once on the target: fraction of its optimum."""
    return {
        source.chip: target.fraction(source.recording.best()[0])
        for source in sources
        if source.family == target.family and source.chip != target.chip
    }
