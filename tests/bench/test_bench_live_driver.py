"""The live benchmark's driver end to end on CPU, with the GPU runner replaced by a REPLAY.

No GPU here, so `LiveBench.runner` is swapped for a runner that plays back the committed H200
sweeps (recorded measurements, not live ones) with a fixed SYNTHETIC cost per attempt; the rest
is the real driver: memories prepared in worker processes behind HTTP servers, the agent's
runs over HTTP, scoring, the report and the trajectory files.
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path
from typing import Any

import pytest

import tunemem.bench.live.run as live
from tunemem.bench.live.memories import load_sweeps
from tunemem.ingest.readers import native
from tunemem.kernels.runners.base import EvalResult
from tunemem.kernels.runners.replay import Recording, ReplayRunner

SWEEPS = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200"


class RecordedRunner(ReplayRunner):
    """The recorded sweep of one shape, with the live runner's space and a SYNTHETIC cost."""

    name = "cuda"

    def __init__(self, task: Any, case: Any) -> None:
        super().__init__(
            recording=Recording.from_trajectory(load_sweeps(SWEEPS, task.name)[case.name])
        )
        self.kernel_task = task

    def parameter_space(self) -> dict[str, list[Any]]:
        return {k: list(v) for k, v in self.kernel_task.tuning_space.items()}

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        result = super().evaluate(config)
        metrics = {**result.metrics, "cost_s": 0.02, "cost_first_launch_s": 0.01}
        if result.latency_ms:
            metrics.setdefault("latency_median_ms", result.latency_ms)
        return dataclasses.replace(result, metrics=metrics)

    def release(self) -> None:
        pass


@pytest.fixture
def recorded_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """An H200 as the driver sees it, its runner playing back the recorded sweeps."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda *a: types.SimpleNamespace(multi_processor_count=132),
    )
    monkeypatch.setattr(
        live.LiveBench, "runner", lambda self, task, case: RecordedRunner(task, case)
    )


@pytest.mark.skipif(not (SWEEPS / "softmax.jsonl").is_file(), reason="no committed H200 sweeps")
# Quiet timing changes only when memories are prepared (before a shape, not beside it): one
# shape shows that, where the overlapped run needs two to overlap the next shape's memory.
@pytest.mark.parametrize(
    ("timing", "shapes"), [([], 2), (["--quiet-timing"], 1)], ids=["overlapped", "quiet"]
)
def test_driver_writes_a_scored_report_and_ingestible_trajectories(
    tmp_path: Path, recorded_gpu: None, timing: list[str], shapes: int
) -> None:
    out = tmp_path / "out"
    code = live.main(
        [
            *("--tasks", "softmax", "--shapes", str(shapes), "--budget", "4", "--workers", "2"),
            *("--arms", "random,value_backoff", "--out", str(out), "--trajectories", str(out)),
            *timing,
        ]
    )
    assert code == 0
    report = json.loads((out / "live.json").read_text())
    assert [e["shape"] for e in report["shapes"]] == [
        c for c in list(load_sweeps(SWEEPS, "softmax"))[:shapes]
    ]
    for entry in report["shapes"]:
        assert set(entry["runs"]) == {"random", "same_task/value_backoff"}
        memory = entry["runs"]["same_task/value_backoff"]["memory"]
        assert memory["url"].startswith("http://127.0.0.1:")
        # every other recorded shape (not just the held-out ones) is replayed as a source
        assert memory["replayed_attempts"] == 4 * (len(load_sweeps(SWEEPS, "softmax")) - 1)
        assert len(entry["sweep"]["attempts"]) == len(
            load_sweeps(SWEEPS, "softmax")[entry["shape"]].attempts
        )
        for run in entry["runs"].values():
            assert len(run["attempts"]) == 4 and 0.0 <= run["score"]["fraction_at"]["1"] <= 1.5
    assert "same_task/value_backoff" in report["summary_all_shapes"]
    assert "all_tasks skipped" in " ".join(report["notes"])
    text = (out / "live.md").read_text()
    assert "tunemem bench live --tasks softmax" in text
    records = list(native.read(out / "live-softmax.jsonl"))
    roles = sorted(r.evidence["role"] for r in records)
    assert roles == ["agent"] * 2 * shapes + ["sweep"] * shapes


@pytest.mark.skipif(not (SWEEPS / "gemm.jsonl").is_file(), reason="no committed H200 sweeps")
def test_default_arm_tunes_through_the_services_suggest(tmp_path: Path, recorded_gpu: None) -> None:
    """The `default` arm's agent asks POST /v1/suggest: its attempts come from the service's
    search (exemplars, then the performance model once the run has outcomes), never repeat a
    configuration, and the report checks the decode-attention goal on it."""
    out = tmp_path / "out"
    code = live.main(
        [
            *("--tasks", "gemm", "--shapes", "1", "--budget", "6", "--workers", "1"),
            *("--arms", "default", "--settings", "same_task", "--embedder", "hashing"),
            *("--out", str(out), "--trajectories", str(out)),
        ]
    )
    assert code == 0
    report = json.loads((out / "live.json").read_text())
    assert report["proposers"] == {"default": "suggest"}
    (entry,) = report["shapes"]
    attempts = entry["runs"]["same_task/default"]["attempts"]
    assert len(attempts) == 6
    origins = [a["origin"] for a in attempts]
    assert origins[0].startswith("exemplar:")
    assert all(o.split(":")[0] in {"exemplar", "model", "search", "preference"} for o in origins)
    configs = [json.dumps(a["config"], sort_keys=True) for a in attempts]
    assert len(set(configs)) == len(configs)
    assert "same_task_default_reaches_0.97_within_5" in report["goals_all_shapes"]
