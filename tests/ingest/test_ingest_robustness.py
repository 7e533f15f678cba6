"""Bad files never crash, hang or flood an ingest run (issue 11, points 3, 4 and 5).

Every input here is synthetic, written into temporary folders by the tests: absurd latencies,
a device name that is an object, symbolic-link loops, FIFOs, gzip bombs, JSON nested past any
parser's depth, and a search space whose parameters never repeat a value.
"""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc
from pathlib import Path

import pytest

from tunemem.ingest.distill import distill
from tunemem.ingest.errors import DistillError
from tunemem.ingest.readers import iter_paths, read_any
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES


def _cache_doc(device: object, entries: dict) -> dict:
    return {
        "device_name": device,
        "kernel_name": "vector_add_kernel",
        "tune_params_keys": ["block_size_x"],
        "cache": entries,
    }


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _split(records: list) -> tuple[list[TrajectoryRecord], list[RejectedRecord]]:
    trajectories = [r for r in records if isinstance(r, TrajectoryRecord)]
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    assert len(trajectories) + len(rejects) == len(records)
    return trajectories, rejects


def test_absurd_latencies_are_rejected_entries_and_distillation_goes_on(tmp_path: Path) -> None:
    entries = {
        str(i): {"block_size_x": i % 7, "time": 1e308 if i % 3 == 0 else float(i)}
        for i in range(1, 60)
    }
    # Below the 1e-9 ms floor that /v1/outcomes keeps too (issue 30): a reject, not a latency.
    entries["1"]["time"] = 1e-20
    path = _write(tmp_path / "a100.json", _cache_doc("NVIDIA A100-PCIE-40GB", entries))
    (traj,), rejects = _split(list(read_any([path])))
    assert len(rejects) == 20
    assert all(("1e+308" in r.reason or "1e-20" in r.reason) for r in rejects)
    assert all("latency" in r.reason for r in rejects)
    drafts = distill(traj)
    assert drafts and all(d.hint is None or "inf" not in json.dumps(d.hint) for d in drafts)


def test_tiny_first_latency_does_not_divide_by_zero() -> None:
    attempts = [AttemptRecord(0, {"a": 0}, latency_ms=5e-324)] + [
        AttemptRecord(i, {"a": i % 2}, latency_ms=2.0 + i) for i in range(1, 8)
    ]
    traj = TrajectoryRecord("synthetic", "s", TaskSpec("op"), ContextSpec("a100", "cuda"), attempts)
    drafts = distill(traj)
    assert drafts and all("inf" not in d.text for d in drafts)


def test_object_device_name_rejects_that_file_and_the_run_continues(tmp_path: Path) -> None:
    entries = {"32": {"block_size_x": 32, "time": 1.0}, "64": {"block_size_x": 64, "time": 2.0}}
    bad = _write(tmp_path / "a_bad.json", _cache_doc({"name": "A100"}, entries))
    good = _write(tmp_path / "b_good.json", _cache_doc("NVIDIA A100-PCIE-40GB", entries))
    records = list(read_any([tmp_path]))
    (traj,), (reject,) = _split(records)
    assert reject.path == str(bad) and reject.position == "file"
    assert "device_name" in reject.reason and "string" in reject.reason
    assert traj.evidence["path"] == str(good)


def test_malformed_trajectory_reaching_distill_raises_only_distill_error() -> None:
    traj = TrajectoryRecord(
        "synthetic",
        "s",
        TaskSpec("op"),
        ContextSpec("a100", "cuda"),
        ["not an attempt"],  # type: ignore[list-item]
    )
    with pytest.raises(DistillError) as caught:
        distill(traj)
    assert caught.value.source == "s" and caught.value.reason


def test_symlink_loops_end_and_each_file_is_read_once(tmp_path: Path) -> None:
    entries = {"32": {"block_size_x": 32, "time": 1.0}, "64": {"block_size_x": 64, "time": 2.0}}
    runs = tmp_path / "runs"
    (runs / "sub").mkdir(parents=True)
    _write(runs / "a100.json", _cache_doc("NVIDIA A100-PCIE-40GB", entries))
    _write(runs / "sub" / "h100.json", _cache_doc("NVIDIA H100", entries))
    os.symlink(".", runs / "a")
    os.symlink(".", runs / "b")
    os.symlink("..", runs / "sub" / "up")
    os.symlink("a100.json", runs / "same_file.json")
    os.link(runs / "a100.json", runs / "hard_link.json")
    paths = list(iter_paths([runs, runs / "a"]))
    assert sorted(p.name for p in paths) == ["a100.json", "h100.json"]
    trajectories, rejects = _split(list(read_any([runs])))
    assert len(trajectories) == 2 and not rejects


def test_fifos_and_devices_are_skipped_in_folders_and_rejected_when_named(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    os.symlink("/dev/zero", tmp_path / "zeros.json")
    os.symlink(tmp_path / "missing.json", tmp_path / "dangling.json")
    assert list(iter_paths([tmp_path])) == []
    (fifo,) = list(read_any([tmp_path / "pipe.json"]))
    assert isinstance(fifo, RejectedRecord) and "regular file" in fifo.reason
    (zeros,) = list(read_any([tmp_path / "zeros.json"], fmt="kerneltuner"))
    assert isinstance(zeros, RejectedRecord) and "regular file" in zeros.reason


def _gzip_bomb(path: Path, mebibytes: int) -> Path:
    """`mebibytes` MiB of spaces as concatenated gzip members: about 1 KiB each on disk."""
    member = gzip.compress(b" " * 2**20)
    path.write_bytes(member * mebibytes)
    return path


def test_gzip_bomb_is_rejected_at_the_limit_without_expanding(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz", 2048)  # 2 GiB of whitespace in about 2 MB
    tracemalloc.start()
    try:
        (reject,) = list(read_any([bomb], fmt="kerneltuner", max_file_bytes=2**20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(reject, RejectedRecord) and reject.position == "file"
    assert "more than 1,048,576 decompressed bytes" in reject.reason
    assert "ingest_max_file_bytes" in reject.reason
    assert peak < 16 * 2**20


def test_default_limit_rejects_the_two_gib_bomb(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz", 2048)
    (reject,) = list(read_any([bomb], fmt="kerneltuner"))
    assert isinstance(reject, RejectedRecord)
    assert f"more than {DEFAULT_MAX_FILE_BYTES:,} decompressed bytes" in reject.reason


def test_native_stream_stops_at_the_limit_after_the_lines_before_it(tmp_path: Path) -> None:
    traj = TrajectoryRecord(
        "synthetic",
        "runs/x",
        TaskSpec("softmax"),
        ContextSpec("h200", "cuda"),
        [AttemptRecord(0, {"B": 1}, latency_ms=0.5)],
    )
    line = json.dumps(traj.to_dict()) + "\n"
    path = tmp_path / "runs.jsonl.gz"
    path.write_bytes(gzip.compress(line.encode() + b" " * 2**22))
    records = list(read_any([path], max_file_bytes=2**20))
    assert records[0] == traj
    assert isinstance(records[1], RejectedRecord) and "more than" in records[1].reason


def test_json_nested_too_deep_is_a_reject(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"device_name": "x", "cache": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (reject,) = list(read_any([deep], fmt="kerneltuner"))
    assert isinstance(reject, RejectedRecord) and "nested too deeply" in reject.reason
    line = tmp_path / "deep.jsonl"
    line.write_text('{"version": 1, "source_format": "x", "task": ' + "[" * 100_000 + "}\n")
    (reject,) = list(read_any([line], fmt="native"))
    assert isinstance(reject, RejectedRecord) and "nested too deeply" in reject.reason


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("[" * 40 + "1" + "]" * 40, "nested deeper than"),
        ("Infinity", "JSON cannot carry"),
        ("NaN", "JSON cannot carry"),
        ("-1e400", "JSON cannot carry"),
    ],
)
def test_parameter_values_json_cannot_carry_are_entry_rejects(
    tmp_path: Path, value: str, words: str
) -> None:
    text = (
        '{"device_name": "NVIDIA A100-PCIE-40GB", "tune_params_keys": ["b"], "cache": {'
        f'"1": {{"b": 1, "time": 1.0}}, "2": {{"b": 2, "time": 2.0}}, "3": {{"b": {value}, '
        '"time": 3.0}}}'
    )
    path = tmp_path / "odd.json"
    path.write_text(text)
    (traj,), (reject,) = _split(list(read_any([path], fmt="kerneltuner")))
    assert reject.position == "cache['3']" and words in reject.reason
    assert len(traj.attempts) == 2


@pytest.mark.timeout(60)
def test_distilling_a_space_of_distinct_values_stays_small() -> None:
    """Synthetic: 20,000 configurations, two parameters whose values never repeat, half
    failing. Pairs of such parameters used to need (20,000)^2 bins."""
    n = 20_000
    attempts = [
        AttemptRecord(
            i,
            {"a": i, "b": n - i, "c": i % 4},
            compiled=i % 2 == 0,
            correct=None if i % 2 else True,
            error_category="compile" if i % 2 else None,
            latency_ms=None if i % 2 else 1.0 + (i % 97),
        )
        for i in range(n)
    ]
    traj = TrajectoryRecord("synthetic", "s", TaskSpec("op"), ContextSpec("a100", "cuda"), attempts)
    tracemalloc.start()
    try:
        drafts = distill(traj)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert drafts
    assert peak < 256 * 2**20
