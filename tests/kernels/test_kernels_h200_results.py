"""The committed H200 sweep results are real native trajectories that ingest can read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.readers import native
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.kernels.sweep import write_trajectories

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
KERNELS = RESULTS / "kernels" / "kernels.json"
# Files of other benchmarks beside the harness's own sweeps (tested below, each its own way).
OTHER_BENCHMARKS = ("live-", "autotune-")


def test_long_trajectories_are_detected_as_native(tmp_path):
    attempts = [AttemptRecord(index=i, params={"BLOCK": 2**i, "pad": "x" * 200}) for i in range(40)]
    record = TrajectoryRecord(
        "native",
        "test/long",
        TaskSpec(op="softmax"),
        ContextSpec(chip="h200", backend="cuda"),
        attempts,
    )
    path = tmp_path / "long.jsonl"
    write_trajectories([record], path)
    assert path.stat().st_size > 4096 and native.detect(path)
    assert [r.id for r in native.read(path)] == [record.id]


@pytest.mark.skipif(not (RESULTS / "h200").is_dir(), reason="no committed H200 results")
def test_committed_h200_trajectories_read_cleanly():
    files = sorted(
        p for p in (RESULTS / "h200").glob("*.jsonl") if not p.stem.startswith(OTHER_BENCHMARKS)
    )
    assert {f.stem for f in files} == {"softmax", "rmsnorm", "gemm", "attention"}
    for path in files:
        assert path.stat().st_size < 2 * 1024 * 1024
        records = list(native.read(path))
        assert records and not any(isinstance(r, RejectedRecord) for r in records)
        for record in records:
            assert record.context.chip == "h200" and not record.synthetic
            assert record.evidence["runner"] == "cuda"
            assert any(a.feasible and a.latency_ms for a in record.attempts)


@pytest.mark.skipif(not KERNELS.is_file(), reason="no committed bench result")
def test_committed_report_rows_match_their_trajectories():
    report = json.loads(KERNELS.read_text())
    best = {}
    for path in sorted((RESULTS / "h200").glob("*.jsonl")):
        if path.stem.startswith(OTHER_BENCHMARKS):
            continue
        for record in native.read(path):
            medians = [a.metrics["latency_median_ms"] for a in record.attempts if a.feasible]
            best[(path.stem, record.evidence["shape_name"])] = min(medians)
    for row in report["rows"]:
        assert row["triton"]["median_ms"] == pytest.approx(best[(row["task"], row["shape"])])


LIVE = sorted((RESULTS / "h200").glob("live-*.jsonl")) if (RESULTS / "h200").is_dir() else []


@pytest.mark.skipif(not LIVE, reason="no committed live benchmark trajectories")
def test_live_benchmark_trajectories_ingest_cleanly(tmp_path):
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    assert {p.stem for p in LIVE} == {
        "live-softmax",
        "live-rmsnorm",
        "live-gemm",
        "live-attention",
        "live-decode_attention",
    }
    records = []
    for path in LIVE:
        assert path.stat().st_size < 2 * 1024 * 1024
        found = list(native.read(path))
        assert found and not any(isinstance(r, RejectedRecord) for r in found)
        for record in found:
            assert record.context.chip == "h200" and not record.synthetic
            assert record.evidence["benchmark"] == "live" and record.evidence["runner"] == "cuda"
            assert record.evidence["template_hash"] and record.context.toolchain["triton"]
            assert record.evidence["role"] in ("sweep", "agent")
            for attempt in record.attempts:
                assert "cost_s" in attempt.metrics  # what each live attempt cost, measured
                if attempt.feasible:
                    assert attempt.metrics["latency_p10_ms"] <= attempt.metrics["latency_p90_ms"]
        records += found
    agents = [r for r in records if r.evidence["role"] == "agent"]
    assert {r.evidence["arm"] for r in agents} == {"random", "similarity", "value_backoff"}
    decode = [r for r in agents if r.task.kernel == "decode_attention_kernel"]
    assert len({r.evidence["held_out"] for r in decode}) == 6  # tuned live, every decode shape
    service = MemoryService(Settings(data_dir=tmp_path, index="memory", embedder="hashing"))
    try:
        summary = service.ingest(records)
        again = service.ingest(records)
    finally:
        service.close()
    assert summary.rejected == 0 and summary.added == len(records)
    assert again.added == 0  # idempotent: the same trajectories are not stored twice


AUTOTUNE = (
    sorted((RESULTS / "h200").glob("autotune-*.jsonl")) if (RESULTS / "h200").is_dir() else []
)


@pytest.mark.skipif(not AUTOTUNE, reason="no committed autotune benchmark trajectories")
def test_autotune_benchmark_trajectories_ingest_cleanly(tmp_path):
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    records = []
    for path in AUTOTUNE:
        found = list(native.read(path))
        assert found and not any(isinstance(r, RejectedRecord) for r in found)
        for record in found:
            assert record.context.chip == "h200" and not record.synthetic
            assert record.evidence["role"] in ("drop-in", "full_autotune")
            assert any(a.feasible and a.latency_ms for a in record.attempts)
        records += found
    dropped_in = [r for r in records if r.evidence["role"] == "drop-in"]
    assert dropped_in and all(r.context.toolchain["triton"] for r in dropped_in)
    assert all(len(r.attempts) < r.evidence["given_configs"] for r in dropped_in)
    service = MemoryService(Settings(data_dir=tmp_path, index="memory", embedder="hashing"))
    try:
        summary = service.ingest(records)
    finally:
        service.close()
    assert summary.rejected == 0 and summary.added == len(records)


MODEL_LIVE = (
    sorted((RESULTS / "h200" / "model").glob("live-decode_attention*.jsonl"))
    if (RESULTS / "h200" / "model").is_dir()
    else []
)


@pytest.mark.skipif(not MODEL_LIVE, reason="no committed live run of the default arm")
@pytest.mark.parametrize("path", MODEL_LIVE, ids=[p.stem for p in MODEL_LIVE])
def test_live_default_arm_trajectories_come_from_the_services_search(tmp_path, path):
    """The live decode-attention run of the `default` arm (the agent on POST /v1/suggest): its
    runs ingest cleanly, each held-out shape was re-swept and tuned by every arm, and the
    default arm's attempts after its first outcomes come from the performance model."""
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    records = list(native.read(path))
    assert records and not any(isinstance(r, RejectedRecord) for r in records)
    agents = [r for r in records if r.evidence["role"] == "agent"]
    sweeps = [r for r in records if r.evidence["role"] == "sweep"]
    assert {r.evidence["arm"] for r in agents} == {
        "random",
        "similarity",
        "value_backoff",
        "default",
    }
    held_out = {r.evidence["held_out"] for r in sweeps}
    assert len(held_out) == 6 and {r.evidence["held_out"] for r in agents} == held_out
    default = [r for r in agents if r.evidence["arm"] == "default"]
    for record in default:
        origins = record.evidence["origins"]
        assert origins[0].startswith("exemplar") and "model" in origins
    service = MemoryService(Settings(data_dir=tmp_path, index="memory", embedder="hashing"))
    try:
        summary = service.ingest(records)
    finally:
        service.close()
    assert summary.rejected == 0 and summary.added == len(records)
