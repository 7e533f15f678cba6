"""An ingest killed with SIGKILL midway, then rerun, ends with the same store as a clean one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tunemem.ingest.readers.native import write_native
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord

CHIPS = ("a100", "h100", "h200", "l40s", "mi250x", "mi300x", "w6600", "a4000")


def synthetic_runs(path: Path) -> Path:
    """Synthetic trajectories (latencies invented, labelled synthetic), one per chip."""
    runs = []
    for c, chip in enumerate(CHIPS):
        attempts = [
            AttemptRecord(
                i,
                {"BLOCK": b, "num_warps": w, "num_stages": s},
                latency_ms=(1 + c) * (1 + abs(b - 64 * (c + 1)) / 512) * (1 + w / 16 + s / 8),
            )
            for i, (b, w, s) in enumerate(
                (b, w, s) for b in (32, 64, 128, 256, 512) for w in (1, 2, 4, 8) for s in (1, 2, 3)
            )
        ]
        attempts += [
            AttemptRecord(
                len(attempts) + j,
                {"BLOCK": 1024, "num_warps": 1, "num_stages": s},
                compiled=False,
                correct=None,
                error_category="resources",
                error="out of shared memory",
            )
            for j, s in enumerate((1, 2, 3, 4, 5))
        ]
        runs.append(
            TrajectoryRecord(
                "native",
                f"synthetic-{chip}",
                TaskSpec("rmsnorm", "rmsnorm_fwd", {"N": 4096 * (c + 1)}, "bf16"),
                ContextSpec(chip, "hip" if chip in ("mi250x", "mi300x", "w6600") else "cuda"),
                attempts,
                synthetic=True,
            )
        )
    write_native(runs, path)
    return path


def ingest_cmd(data_dir: Path) -> list[str]:
    paths = [str(synthetic_runs(data_dir.parent / "runs.jsonl"))]
    code = "from tunemem.cli.app import main; main()"
    return [
        sys.executable,
        "-c",
        code,
        "ingest",
        *paths,
        "--quiet",
        "--batch-size",
        "1",
        "--data-dir",
        str(data_dir),
    ]


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TUNEMEM_INDEX": "chroma"}


def committed_trajectories(data_dir: Path) -> int:
    db = data_dir / "tunemem.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute("select count(*) from trajectory").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def store_state(data_dir: Path) -> dict:
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    service = MemoryService(Settings(data_dir=data_dir))
    try:
        with sqlite3.connect(data_dir / "tunemem.db") as conn:
            state = {
                "trajectories": sorted(
                    conn.execute("select id, n_attempts from trajectory").fetchall()
                ),
                "attempts": sorted(
                    conn.execute(
                        'select trajectory_id, "index", params, latency_ms, error_category '
                        "from attempt"
                    ).fetchall()
                ),
                "lessons": sorted(
                    conn.execute(
                        "select id, kind, text, hint, applicability, status from lesson"
                    ).fetchall()
                ),
            }
        state["index_count"] = service.index.count()
        return state
    finally:
        service.close()


def test_sigkill_midway_then_rerun_equals_uninterrupted(tmp_path: Path):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(ingest_cmd(clean), env=env(), check=True, capture_output=True, timeout=900)
    total = committed_trajectories(clean)
    assert total > 3

    proc = subprocess.Popen(
        ingest_cmd(killed), env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 600
    while committed_trajectories(killed) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    assert proc.poll() is None, "the ingest finished before it could be killed; nothing was tested"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = committed_trajectories(killed)
    assert 0 < partial < total

    rerun = subprocess.run(
        ingest_cmd(killed), env=env(), capture_output=True, text=True, timeout=900
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"skipped {partial}" in rerun.stdout
    assert store_state(killed) == store_state(clean)
