"""Rejects for malformed records, failure categories, unknown chips, distillation behaviour.

Malformed inputs here are synthetic, written into temporary files by each test.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tunemem.ingest.distill import distill
from tunemem.ingest.error_categories import failure_category
from tunemem.ingest.readers import read_any
from tunemem.ingest.readers.native import write_native
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)


def _cache(tmp_path: Path, device: str, entries: dict) -> Path:
    doc = {
        "device_name": device,
        "kernel_name": "vector_add_kernel",
        "problem_size": [1024],
        "tune_params_keys": ["block_size_x"],
        "tune_params": {"block_size_x": [32, 64]},
        "objective": "time",
        "cache": entries,
    }
    path = tmp_path / "synthetic_cache.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_malformed_cache_entries_become_rejects(tmp_path: Path) -> None:
    path = _cache(
        tmp_path,
        "NVIDIA A100-PCIE-40GB",
        {
            "32": {"block_size_x": 32, "time": 1.0, "times": [1.0, 1.1]},
            "64": {"block_size_x": 64, "time": "CompilationFailedConfig"},
            # parameters only in the key, as older Kernel Tuner versions wrote: read from it
            "96": {"time": 2.0},
            "96,1": {"time": 2.0},
            "128": {"block_size_x": 128, "time": None},
            "160": [1, 2],
        },
    )
    records = list(read_any([path]))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    (traj,) = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert [r.position for r in rejects] == ["cache['96,1']", "cache['128']", "cache['160']"]
    assert "key has 2 values for 1 parameters" in rejects[0].reason
    assert "time" in rejects[1].reason
    assert all(r.path == str(path) for r in rejects)
    assert [a.error_category for a in traj.attempts] == [None, "compile", None]
    assert traj.attempts[2].params == {"block_size_x": 96}


def test_unreadable_files_are_rejected_and_the_run_continues(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json.gz"
    bad.write_bytes(b"not gzip at all")
    good = _cache(tmp_path, "NVIDIA A100-PCIE-40GB", {"32": {"block_size_x": 32, "time": 1.0}})
    records = list(read_any([bad, good], fmt="kerneltuner"))
    assert isinstance(records[0], RejectedRecord) and records[0].position == "file"
    assert isinstance(records[1], TrajectoryRecord)
    (unknown,) = list(read_any([tmp_path / "notes.txt"]))
    assert isinstance(unknown, RejectedRecord)


def test_native_round_trip_and_bad_lines(tmp_path: Path) -> None:
    traj = TrajectoryRecord(
        "h200-run",
        "runs/x",
        TaskSpec("softmax", signature={"cols": 1024}),
        ContextSpec("h200", "cuda"),
        [AttemptRecord(0, {"B": 1}, latency_ms=0.5)],
    )
    path = tmp_path / "runs.jsonl"
    write_native([traj], path)
    with open(path, "a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({**traj.to_dict(), "version": 99}) + "\n")
        handle.write(json.dumps({"version": 1, "source": "x"}) + "\n")
    records = list(read_any([path]))
    assert records[0] == traj and records[0].id == traj.id
    assert [(r.position, r.reason.split(":")[0]) for r in records[1:]] == [
        ("line 2", "not valid JSON"),
        ("line 3", "format version 99 is newer than this reader (1)"),
        ("line 4", "not a trajectory record"),
    ]


@pytest.mark.parametrize(
    ("marker", "category"),
    [
        ("CompilationFailedConfig", "compile"),
        ("RuntimeFailedConfig", "runtime"),
        ("InvalidConfig", "other"),
        ("ErrorConfig", "other"),
        ("compile", "compile"),
        ("runtime", "runtime"),
        ("correctness", "incorrect"),
        ("timeout", "timeout"),
        ("OutOfResources: shared memory", "resources"),
    ],
)
def test_failure_category_mapping(marker: str, category: str) -> None:
    assert failure_category(marker) == category


def test_unknown_device_gets_explicit_unknown_chip(tmp_path: Path) -> None:
    entries = {"32": {"block_size_x": 32, "time": 1.0}, "64": {"block_size_x": 64, "time": 2.0}}
    vendor = next(read_any([_cache(tmp_path, "NVIDIA Quantum Z9000", entries)]))
    assert vendor.context.chip.startswith("unknown:") and vendor.context.backend == "cuda"
    assert vendor.context.chip_raw == "NVIDIA Quantum Z9000"
    blank = next(read_any([_cache(tmp_path, "Mystery Board", entries)]))
    assert (blank.context.chip, blank.context.backend) == ("unknown", "unknown")
    lessons = distill(vendor)
    assert lessons and lessons[0].applicability["chips"] == []
    assert lessons[0].applicability["backends"] == ["cuda"]


def _synthetic_space() -> TrajectoryRecord:
    """Synthetic: latency halves with use_shmem=1; tile=8 with shmem fails to compile."""
    attempts = []
    for block in (16, 32, 64, 128, 256):
        for tile in (1, 2, 4, 8):
            for shmem in (0, 1):
                index = len(attempts)
                if tile == 8 and shmem == 1:
                    attempts.append(
                        AttemptRecord(
                            index,
                            {"block": block, "tile": tile, "use_shmem": shmem},
                            compiled=False,
                            correct=None,
                            error_category="compile",
                            error="too much shared memory",
                        )
                    )
                    continue
                latency = (2.0 if shmem == 0 else 1.0) * (1 + 0.01 * block / 16 + 0.001 * tile)
                attempts.append(
                    AttemptRecord(
                        index,
                        {"block": block, "tile": tile, "use_shmem": shmem},
                        latency_ms=latency,
                    )
                )
    return TrajectoryRecord(
        "synthetic",
        "synthetic-space",
        TaskSpec("stencil", signature={"n": 64}),
        ContextSpec("a100", "cuda", chip_raw="NVIDIA A100-PCIE-40GB"),
        attempts,
        synthetic=True,
    )


def test_distill_exemplars_effects_and_failures() -> None:
    drafts = distill(_synthetic_space(), top_k=2)
    kinds = [d.kind for d in drafts]
    assert kinds[:2] == ["exemplar", "exemplar"]
    best = drafts[0].hint
    assert best["config"] == {"block": 16, "tile": 1, "use_shmem": 1} and best["rank"] == 1
    assert best["ratio_to_first"] == pytest.approx(2.0, rel=1e-6)
    assert (
        "fastest of 35 valid configurations" in drafts[0].text and "NVIDIA A100" in drafts[0].text
    )
    effects = {(d.hint["param"], d.hint["value"]): d.hint for d in drafts if d.kind == "insight"}
    assert effects[("use_shmem", 1)]["effect"] == "prefer"
    # 20 of 35 valid configs have use_shmem=0, so the overall median sits among them.
    assert effects[("use_shmem", 1)]["median_speedup"] == pytest.approx(2.0, rel=0.05)
    assert ("use_shmem", 0) not in effects
    assert not any(param == "block" for param, _ in effects)
    failures = [d.hint for d in drafts if d.kind == "failure"]
    assert failures[0]["avoid"] == {"tile": 8, "use_shmem": 1}
    assert failures[0]["failure_rate"] == 1.0 and failures[0]["error_category"] == "compile"
    app = drafts[0].applicability
    assert app["chips"] == ["a100"] and app["backends"] == ["cuda"] and app["op"] == "stencil"
    assert app["families"] and drafts[0].provenance["synthetic"] is True


def test_distill_is_deterministic() -> None:
    traj = _synthetic_space()
    assert distill(traj) == distill(_synthetic_space())


def test_distill_real_cache_is_deterministic_and_quotes_numbers(shared_data: Path) -> None:
    traj = next(read_any([shared_data / "kerneltuner/convolution/A100.json.gz"]))
    drafts = distill(traj)
    assert drafts == distill(next(read_any([shared_data / "kerneltuner/convolution/A100.json.gz"])))
    assert drafts[0].kind == "exemplar" and "4,201 valid configurations" in drafts[0].text
    assert sum(d.kind == "insight" for d in drafts) <= 6
    assert any(d.kind == "failure" for d in drafts)


def test_unmeasured_exemplars_group_shapes(shared_data: Path) -> None:
    name = "E=128,N=384,device_name=NVIDIA_H100_80GB_HBM3.json"
    traj = next(read_any([shared_data / "vllm_fused_moe" / name]))
    drafts = distill(traj)
    assert len(drafts) == 1 and drafts[0].kind == "exemplar" and drafts[0].hint["measured"] is False
    shapes = [s["M"] for group in drafts[0].hint["by_shape"] for s in group["shapes"]]
    assert shapes == [a.params["M"] for a in traj.attempts]
    assert "no timings recorded" in drafts[0].text
    assert drafts[0].hint["config"] in [group["config"] for group in drafts[0].hint["by_shape"]]


def test_near_equal_handful_of_attempts_gives_no_exemplar() -> None:
    attempts = [
        AttemptRecord(0, {"mode": "eager"}, latency_ms=1.00),
        AttemptRecord(1, {"mode": "compile"}, latency_ms=1.05),
    ]
    traj = TrajectoryRecord(
        "synthetic", "two-modes", TaskSpec("matmul"), ContextSpec("a100", "cuda"), attempts
    )
    assert [d for d in distill(traj) if d.kind == "exemplar"] == []
    attempts[1] = AttemptRecord(1, {"mode": "compile"}, latency_ms=2.0)
    assert [d.hint["config"] for d in distill(traj) if d.kind == "exemplar"] == [{"mode": "eager"}]


def test_code_trajectories_carry_code_and_failure_examples() -> None:
    fixture = Path(__file__).resolve().parent / "fixtures/kernelbench_run/level1_demo_run"
    traj = next(r for r in read_any([fixture]) if isinstance(r, TrajectoryRecord))
    drafts = distill(traj)
    assert (
        drafts[0].kind == "exemplar" and drafts[0].code and drafts[0].hint["latency_ms"] == 0.0198
    )
    failures = [d for d in drafts if d.kind == "failure"]
    assert {d.hint["error_category"] for d in failures} == {"compile", "incorrect"}
    assert "blockDim_x" in next(d.text for d in failures if d.hint["error_category"] == "compile")


def test_llm_distiller_is_opt_in() -> None:
    traj = _synthetic_space()
    extra = distill(traj, llm=lambda t, drafts: [drafts[0]])
    assert len(extra) == len(distill(traj)) + 1


def test_lessons_carry_the_toolchain_they_were_measured_under() -> None:
    from pathlib import Path

    from tunemem.ingest.distill import distill
    from tunemem.ingest.readers import read_any
    from tunemem.ingest.records import TrajectoryRecord

    h200 = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200" / "softmax.jsonl"
    record = next(r for r in read_any([h200]) if isinstance(r, TrajectoryRecord))
    drafts = distill(record)
    assert drafts and all(d.provenance["toolchain"]["triton"] == "3.6.0" for d in drafts)
    assert all(d.provenance["toolchain"]["torch"].startswith("2.11") for d in drafts)
