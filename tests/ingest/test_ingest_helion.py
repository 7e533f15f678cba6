"""The `helion-autotune` reader on real Helion logs (an H100 run, fixtures/README.md), its
lossless flattening of Helion configurations, and its rejects on SYNTHETIC malformed rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tunemem.ingest.readers import detect_format, read_any
from tunemem.ingest.readers.helion_autotune import (
    flatten_config,
    parse_config_text,
    parse_shapes,
    read,
    unflatten_config,
)
from tunemem.ingest.records import RejectedRecord, TrajectoryRecord

HELION = Path(__file__).resolve().parent / "fixtures" / "helion_autotune"
FIRST = HELION / "rms_norm_0_quick.csv"
SEEDED = HELION / "rms_norm_1_quick_mem_g1.csv"
HEADER = "run_id,timestamp_s,config_id,generation,status,perf_ms,compile_time_s,config\n"


def trajectories(path: Path) -> list[TrajectoryRecord]:
    return [r for r in read(path) if isinstance(r, TrajectoryRecord)]


def test_a_real_log_is_one_trajectory_of_every_timed_configuration() -> None:
    (traj,) = trajectories(FIRST)
    assert (traj.task.op, traj.task.kernel, traj.task.dtype) == ("rms_norm", "rms_norm", "float16")
    assert traj.task.signature == {
        "shape": [4096, 4096, 4096],
        "input_shapes": [[4096, 4096], [4096]],
    }
    assert (traj.context.chip, traj.context.backend, traj.context.chip_raw) == (
        "h100",
        "cuda",
        "NVIDIA H100",
    )
    # 120 rows: every configuration once "started", once "ok" with its time.
    assert len(traj.attempts) == 60 and all(a.feasible for a in traj.attempts)
    assert min(a.latency_ms for a in traj.attempts) == pytest.approx(0.024928)
    assert traj.evidence["tool"] == "helion" and traj.evidence["autotune_effort"] == "quick"
    assert traj.evidence["run_id"].startswith("02081599c193")
    first = traj.attempts[0]
    assert first.params["block_sizes[]"] == 1 and first.params["block_sizes[0]"] == 2
    assert first.latency_ms == pytest.approx(0.027392)


def test_the_seeded_log_reads_too_and_auto_detection_finds_the_format(tmp_path: Path) -> None:
    assert detect_format(FIRST) == detect_format(SEEDED) == "helion-autotune"
    shutil.copytree(HELION, tmp_path / "logs")
    records = list(read_any([tmp_path / "logs"]))
    # The sidecars are not logs: skipped silently inside a folder, not rejected.
    assert not [r for r in records if isinstance(r, RejectedRecord)]
    shapes = sorted(r.task.signature["shape"][0] for r in records)
    assert shapes == [4096, 16384]
    assert [len(r.attempts) for r in records if r.task.signature["shape"][0] == 16384] == [20]


def test_reading_twice_gives_the_same_ids() -> None:
    assert [t.id for t in trajectories(FIRST)] == [t.id for t in trajectories(FIRST)]


def test_every_real_configuration_flattens_to_scalars_and_back() -> None:
    configs = json.loads(FIRST.with_name("rms_norm_0_quick.meta.jsonl").read_text())["configs"]
    assert len(configs) == 60
    for config in configs.values():
        flat = flatten_config(config)
        assert all(v is None or isinstance(v, bool | int | float | str) for v in flat.values())
        assert unflatten_config(flat) == config
    # Empty lists and nested lists survive.
    odd = {"a": [], "b": [[1, None], []], "c": "x"}
    assert unflatten_config(flatten_config(odd)) == odd
    with pytest.raises(ValueError):
        unflatten_config({"a[]": 2, "a[0]": 1})


def test_without_the_sidecar_the_config_column_is_read(tmp_path: Path) -> None:
    shutil.copy(FIRST, tmp_path / "alone.csv")
    (alone,) = trajectories(tmp_path / "alone.csv")
    (full,) = trajectories(FIRST)
    assert [a.params for a in alone.attempts] == [a.params for a in full.attempts]
    assert alone.task.op == "alone" and alone.context.chip == "unknown"
    assert alone.evidence["has_meta"] is False


def test_parsers_take_literals_only() -> None:
    assert parse_shapes("[(2048, 2048), (2048,)]") == [[2048, 2048], [2048]]
    assert parse_shapes("__import__('os')") is None
    assert parse_config_text("Config(block_sizes=[64], num_warps=4)") == {
        "block_sizes": [64],
        "num_warps": 4,
    }
    assert parse_config_text("Config(x=open('f'))") is None
    assert parse_config_text("Config(**d)") is None


def test_synthetic_bad_rows_are_rejects_and_failures_are_infeasible(tmp_path: Path) -> None:
    """SYNTHETIC rows: one good, one failed, one untimed, three malformed."""
    log = tmp_path / "bad.csv"
    log.write_text(
        HEADER
        + 'r,1,c1,0,ok,0.5,1.0,"Config(block_sizes=[64], num_warps=4)"\n'
        + 'r,2,c2,0,error,,1.0,"Config(block_sizes=[512], num_warps=4)"\n'
        + 'r,3,c3,0,filtered,,,"Config(block_sizes=[8], num_warps=4)"\n'
        + 'r,4,c4,0,ok,,1.0,"Config(block_sizes=[16], num_warps=4)"\n'
        + 'r,5,c5,0,weird,0.1,1.0,"Config(block_sizes=[16], num_warps=2)"\n'
        + "r,6,c6,0,ok,0.1,1.0,not a config\n"
    )
    log.with_name("bad.meta.jsonl").write_text("{not json\n")
    records = list(read(log))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    reasons = " | ".join(r.reason for r in rejects)
    assert len(rejects) == 4, reasons
    assert "not JSON" in reasons and "without a time" in reasons
    assert "unknown status" in reasons and "unreadable" in reasons
    (traj,) = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert [a.feasible for a in traj.attempts] == [True, False]
    assert traj.attempts[1].error_category == "other"
