"""Replay runner: a recorded Kernel Tuner search space played back as a task.

An attempt's outcome is the recorded measurement of the chosen configuration. A configuration
the recording marks as failed is infeasible with its error category (`compile`, `runtime`); one
the recording does not hold at all (a combination the tuning script's restrictions excluded)
is infeasible with category `rejected`.

The recording itself lives in a `Recording`, which only the runner (held by the agent's evaluate
step) and the benchmark's scoring code touch. A proposer is never handed either: it proposes a
configuration and receives the outcome of that configuration only.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunemem.ingest.provenance import Provenance
from tunemem.ingest.readers.kerneltuner import entry_params
from tunemem.ingest.records import ERROR_CATEGORIES, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.kernels.runners.base import EvalResult, Runner

# How Kernel Tuner marks a configuration that could not be measured, mapped to our categories.
_FAILURE_CATEGORIES = {
    "CompilationFailedConfig": "compile",
    "RuntimeFailedConfig": "runtime",
    "InvalidConfig": "rejected",
}
_THROUGHPUT_KEYS = ("GFLOP/s", "GB/s", "TFLOP/s")


@dataclass(frozen=True)
class RecordedMeasurement:
    """One configuration as the recording holds it: a time in ms, or a failure marker."""

    latency_ms: float | None
    latency_min_ms: float | None
    repetitions: int | None
    failure: str | None
    metrics: dict[str, float] = field(default_factory=dict)


def _read_json(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or "cache" not in data or "tune_params_keys" not in data:
        raise ValueError(f"{path} is not a Kernel Tuner cache file (no 'cache'/'tune_params_keys')")
    return data


def _stem(path: Path) -> str:
    return re.sub(r"\.json(\.gz)?$", "", path.name)


def _chip_from(device_name: str, path: Path) -> tuple[str, str, str]:
    """Chip id, backend and raw name, named exactly as the ingest reader names them."""
    from tunemem.ingest.chip_context import chip_context_with_fallback

    chip, _ = chip_context_with_fallback(device_name, _stem(path))
    return chip.chip, chip.backend, device_name or _stem(path)


def _op_from(kernel_name: str, path: Path) -> str:
    from tunemem.ingest.readers.kerneltuner import op_name

    return op_name(kernel_name or _stem(path))


class Recording:
    """A parsed Kernel Tuner cache: the search space and every recorded measurement."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        data = _read_json(self.path)
        self.param_names: list[str] = list(data["tune_params_keys"])
        given = data.get("tune_params")
        declared: dict[str, Any] = given if isinstance(given, dict) else {}
        self.space: dict[str, list[Any]] = {
            name: list(declared.get(name, [])) for name in self.param_names
        }
        self.measurements: dict[tuple[Any, ...], RecordedMeasurement] = {}
        for raw_key, entry in data["cache"].items():
            if not isinstance(entry, dict):
                continue
            # Older Kernel Tuner caches keep the parameters only in the key.
            params = entry_params(raw_key, entry, self.param_names, declared)
            if isinstance(params, str):
                continue
            key = tuple(params[name] for name in self.param_names)
            for name, value in zip(self.param_names, key, strict=True):
                if value not in self.space[name]:
                    self.space[name].append(value)
            self.measurements[key] = _measurement(entry, data.get("objective", "time"))
        if not self.measurements:
            raise ValueError(
                f"{self.path}: the cache holds no usable configuration "
                f"(of {len(data['cache'])} entries)"
            )
        chip, backend, raw = _chip_from(str(data.get("device_name") or ""), self.path)
        self.task = TaskSpec(
            op=_op_from(str(data.get("kernel_name") or ""), self.path),
            kernel=str(data.get("kernel_name") or "") or None,
            signature={
                "problem_size": data.get("problem_size"),
                "tune_params_keys": list(self.param_names),
            },
        )
        self.context = ContextSpec(chip=chip, backend=backend, chip_raw=raw)

    @classmethod
    def from_trajectory(cls, record: TrajectoryRecord) -> Recording:
        """A recording of a native trajectory (e.g. the H200 sweep of one shape).

        Its space is the values each parameter took; an attempt measured twice keeps the
        later measurement.
        """
        recording = cls.__new__(cls)
        recording.path = Path(record.source)
        recording.param_names = list(record.attempts[0].params) if record.attempts else []
        recording.space = {name: [] for name in recording.param_names}
        recording.measurements = {}
        for attempt in record.attempts:
            key = tuple(attempt.params.get(name) for name in recording.param_names)
            for name, value in zip(recording.param_names, key, strict=True):
                if value not in recording.space[name]:
                    recording.space[name].append(value)
            failure = None if attempt.feasible else (attempt.error_category or "other")
            recording.measurements[key] = RecordedMeasurement(
                latency_ms=attempt.latency_ms if failure is None else None,
                latency_min_ms=attempt.latency_min_ms,
                repetitions=attempt.repetitions,
                failure=failure,
                metrics=dict(attempt.metrics),
            )
        for values in recording.space.values():
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                values.sort()
        recording.task = record.task
        recording.context = record.context
        return recording

    def key(self, config: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(config.get(name) for name in self.param_names)

    def lookup(self, config: Mapping[str, Any]) -> RecordedMeasurement | None:
        return self.measurements.get(self.key(config))

    def feasible(self) -> dict[tuple[Any, ...], float]:
        """Every configuration with a recorded time, mapped to that time."""
        return {k: m.latency_ms for k, m in self.measurements.items() if m.latency_ms is not None}

    def best(self) -> tuple[dict[str, Any], float]:
        """The recorded optimum: its configuration and latency (ms).

        Raises:
            ValueError: naming the file, when no configuration has a recorded time.
        """
        feasible = self.feasible()
        if not feasible:
            raise ValueError(f"{self.path}: no configuration of the cache has a recorded time")
        key, latency = min(feasible.items(), key=lambda item: item[1])
        return dict(zip(self.param_names, key, strict=True)), latency

    def latency_of(self, config: Mapping[str, Any]) -> float | None:
        found = self.lookup(config)
        return found.latency_ms if found else None


def _measurement(entry: Mapping[str, Any], objective: str) -> RecordedMeasurement:
    value = entry.get(objective if objective in entry else "time")
    metrics = {
        k: float(entry[k]) for k in _THROUGHPUT_KEYS if isinstance(entry.get(k), int | float)
    }
    if isinstance(value, int | float) and not isinstance(value, bool):
        times = [t for t in entry.get("times") or [] if isinstance(t, int | float)]
        if len(times) > 1:  # the spread of the repeated timings, as the live harness reports it
            metrics["latency_std_ms"] = statistics.pstdev(times)
        return RecordedMeasurement(
            latency_ms=float(value),
            latency_min_ms=float(min(times)) if times else None,
            repetitions=len(times) or None,
            failure=None,
            metrics=metrics,
        )
    return RecordedMeasurement(None, None, None, failure=str(value), metrics=metrics)


class ReplayRunner(Runner):
    """Evaluates configurations by looking them up in a recorded search space."""

    name = "replay"

    def __init__(self, path: str | Path | None = None, recording: Recording | None = None) -> None:
        if recording is None:
            if path is None:
                raise ValueError("ReplayRunner needs path=<Kernel Tuner cache file>")
            recording = Recording(path)
        self._recording = recording
        self.task: TaskSpec = recording.task
        self.context: ContextSpec = recording.context

    def parameter_space(self) -> dict[str, list[Any]]:
        return {name: list(values) for name, values in self._recording.space.items()}

    def provenance(self) -> Provenance:
        """Answered from a recording: replayed, timed on no device now."""
        return Provenance(origin="replayed", coverage="partial")

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        space = self._recording.space
        unknown = sorted(set(config) - set(space))
        missing = [name for name in space if name not in config]
        if unknown or missing:
            return EvalResult(
                compiled=False,
                correct=None,
                error_category="rejected",
                error=f"configuration does not match the parameter space "
                f"(unknown {unknown}, missing {missing})",
            )
        outside = {k: v for k, v in config.items() if v not in space[k]}
        if outside:
            return EvalResult(
                False, None, "rejected", f"values outside the parameter space: {outside}"
            )
        found = self._recording.lookup(config)
        if found is None:
            return EvalResult(
                False, None, "rejected", "configuration excluded by the search space restrictions"
            )
        if found.failure is not None:
            category = _FAILURE_CATEGORIES.get(found.failure, found.failure)
            if category not in ERROR_CATEGORIES:
                category = "other"
            return EvalResult(
                compiled=category not in ("compile", "rejected"),
                correct=None if category in ("compile", "rejected") else False,
                error_category=category,
                error=found.failure,
            )
        return EvalResult(
            compiled=True,
            correct=True,
            latency_ms=found.latency_ms,
            latency_min_ms=found.latency_min_ms,
            repetitions=found.repetitions,
            metrics=dict(found.metrics),
        )
