"""`bench autotune`'s protocol end to end on the CPU (Triton interpreter, the tasks' tiny shapes).

The memories ingest SYNTHETIC sweeps of decode attention's two tiny shapes (invented times,
fastest at BLOCK_N 64 with 2 splits), so each held-out shape is tuned with memory of the other.
Interpreter timings are wall-clock and say nothing about speed; the test checks the protocol:
both arms ran, the drop-in timed only its budget, the re-timing and the report came out, and
the trajectories the drop-in reported were saved.
"""

from __future__ import annotations

import json
import os

import pytest

from tunemem.kernels.catalogue import get_task
from tunemem.kernels.sweep import candidate_configs

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="runs Triton's interpreter on the CPU"
)


def synthetic_sweep(task, case) -> dict:
    attempts = []
    for index, config in enumerate(candidate_configs(task, case.dims)):
        latency = 0.1 + abs(config["BLOCK_N"] - 64) / 640 + abs(config["SPLITS"] - 2) / 100
        attempts.append({"index": index, "params": config, "latency_ms": latency})
    return {
        "version": 1,
        "source_format": "native",
        "source": f"synthetic-sweep/{case.name}",
        "task": {
            "op": task.op,
            "kernel": task.kernel,
            "signature": {**case.dims, "dtype": "bfloat16"},
            "dtype": "bfloat16",
        },
        "context": {"chip": "h200", "backend": "cuda"},
        "attempts": attempts,
        "evidence": {"shape_name": case.name},
        "synthetic": True,
    }


def test_bench_autotune_protocol_on_the_interpreter(tmp_path, monkeypatch):
    from tunemem.bench.autotune.command import main

    task = get_task("decode_attention")
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    lines = [json.dumps(synthetic_sweep(task, case)) for case in task.small_shapes]
    (sweeps / "decode_attention.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = ["--device", "cpu", "--tasks", "decode_attention", "--top-k", "2", "--rounds", "1"]
    argv += ["--sweeps", str(sweeps), "--out", str(out), "--trajectories", str(out)]
    # One held-out shape (the smaller), with a memory of the other's sweep: the protocol whole,
    # at a third of the interpreter's timings of both shapes.
    assert main([*argv, "--shapes", "1", "--workers", "1"]) == 0

    report = json.loads((out / "autotune.json").read_text())
    held_out = task.small_shapes[0]
    assert [r["shape"] for r in report["shapes"]] == [held_out.name]
    assert len(candidate_configs(task, held_out.dims)) > 2  # so the drop-in's 2 are a budget
    for row in report["shapes"]:
        given = len(candidate_configs(task, row["dims"]))
        assert row["full"]["timed"] == given
        assert row["memory"]["timed"] == 2 < given or row["memory"]["timed"] == given
        assert row["memory"]["decision"]["how"] == "memory"
        assert row["memory"]["reported"][0]["sent"]
        assert len(row["retimed_ms"]["full"]) == len(row["retimed_ms"]["memory"]) == 1
        assert row["speed"] > 0 and row["wall_ratio"] > 0
    assert report["summary"]["all"]["shapes"] == 1
    assert "| decode_attention |" in (out / "autotune.md").read_text()
    assert report["memory_held"]["kind"] == "complete"  # the other shape's whole sweep
    assert "Memory held: **complete**" in (out / "autotune.md").read_text()
    saved = [json.loads(line) for line in (out / "autotune-decode_attention.jsonl").open()]
    roles = sorted(r["evidence"]["role"] for r in saved)
    assert roles == ["drop-in", "full_autotune"]


def test_bench_autotune_cold_protocol_on_the_interpreter(tmp_path):
    """--cold: an empty memory, the shapes in a seeded order, the first timed in full, the next
    within top_k with the first one's timings remembered; re-timed against the sweep's best."""
    from tunemem.bench.autotune.command import main

    task = get_task("decode_attention")
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    lines = [json.dumps(synthetic_sweep(task, case)) for case in task.small_shapes]
    (sweeps / "decode_attention.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = ["--device", "cpu", "--tasks", "decode_attention", "--top-k", "2", "--rounds", "1"]
    argv += ["--sweeps", str(sweeps), "--out", str(out), "--trajectories", str(out)]
    # Order 0 puts the smaller shape first (timed in full), then the larger within top_k.
    assert main([*argv, "--cold", "--orders", "0", "--workers", "1", "--name", "cold"]) == 0

    report = json.loads((out / "cold.json").read_text())
    first, second = report["shapes"]
    assert [first["position"], second["position"]] == [0, 1]
    assert first["how"] == "the memory had nothing: every configuration"
    assert first["timed"] == first["given"] == len(candidate_configs(task, get_dims(task, first)))
    assert second["how"] == "memory" and second["timed"] <= 2 < second["given"]
    assert all(r["reported"][0]["sent"] for r in report["shapes"])
    assert second["speed"] > 0 and 0 < second["random_k"] <= 1
    assert report["summary"]["all"]["keys"] == 1  # scored after the first key
    assert "| decode_attention | 0 | 1 |" in (out / "cold.md").read_text()
    assert report["memory_held"]["kind"] == "cold"
    assert "Memory held: **cold**" in (out / "cold.md").read_text()
    # One writer for both protocols: the same head fields, whichever wrote the report.
    head = {"benchmark", "date", "run_id", "command", "machine", "device", "memory_held"}
    assert head | {"top_k", "explore", "rounds", "notes"} <= set(report)
    saved = [json.loads(line) for line in (out / "cold-decode_attention.jsonl").open()]
    assert len(saved) == 2  # what the drop-in reported: the memory's only source


def get_dims(task, row):
    return task.shape(row["shape"]).dims


def test_cold_replay_scores_each_key_after_the_first_against_random_k(tmp_path):
    """The CPU replay of the cold protocol on SYNTHETIC sweeps of the two tiny shapes."""
    from tunemem.bench.autotune.replay import cold_summary, cold_task

    task = get_task("decode_attention")
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    lines = [json.dumps(synthetic_sweep(task, case)) for case in task.small_shapes]
    (sweeps / "decode_attention.jsonl").write_text("\n".join(lines) + "\n")
    rows = cold_task("decode_attention", sweeps, 0.5, 0.5, [0, 1], settings={"embedder": "hashing"})
    assert [r["position"] for r in rows] == [0, 1, 0, 1]
    assert {r["order"] for r in rows} == {0, 1}
    first = [r for r in rows if r["position"] == 0]
    assert all(r["timed"] == r["given"] and r["speed"] == 1.0 for r in first)
    later = [r for r in rows if r["position"] == 1]
    assert all(r["how"] == "memory" and r["timed"] <= max(1, r["given"] // 2) for r in later)
    assert all(0 < r["speed"] <= 1.0 and 0 < r["random_k"] <= 1.0 for r in later)
    summary = cold_summary(rows)
    assert summary["all"]["keys"] == 2 and summary["first_keys"]["keys"] == 2


def test_full_cache_replay_writes_its_provenance_and_each_seed_apart(tmp_path):
    """The CPU replay of the full-cache protocol over two exploration seeds, on SYNTHETIC sweeps:
    the result says how to reproduce it and carries each seed's summary and the range."""
    from tunemem.bench.autotune.replay import main

    task = get_task("decode_attention")
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    lines = [json.dumps(synthetic_sweep(task, case)) for case in task.small_shapes]
    (sweeps / "decode_attention.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out" / "replay.json"
    argv = ["--tasks", "decode_attention", "--sweeps", str(sweeps), "--top-k", "2"]
    assert main([*argv, "--seeds", "0", "1", "--out", str(out)]) == 0

    result = json.loads(out.read_text())
    assert result["seeds"] == [0, 1] and result["measurement"] == "replayed"
    assert result["command"].startswith("python -m tunemem.bench.autotune.replay --tasks")
    assert {r["seed"] for r in result["rows"]} == {0, 1}
    low, high = result["by_seed"]["range"]["2.0"]["speed_mean"]
    assert low <= result["summary"]["2.0"]["speed_mean"] <= high
    text = out.with_suffix(".md").read_text()
    assert "Memory held: **complete**" in text and "Reproduce: `python -m" in text
    assert "| 2.0 | 4 |" in text  # two shapes, each replayed with both seeds
