"""`tunemem ingest` on files that used to crash or hang it (issue 11, points 3, 4 and 5): the
run finishes, every bad file or entry is a reject with its reason in the rejects file, and
the good files are stored. All inputs are synthetic, written by the tests."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from typer.testing import CliRunner

from tunemem.cli.app import app

runner = CliRunner()
ENV = {"TUNEMEM_EMBEDDER": "hashing", "TUNEMEM_INDEX": "memory"}


def cache(device: object, entries: dict) -> dict:
    return {
        "device_name": device,
        "kernel_name": "vector_add_kernel",
        "tune_params_keys": ["block_size_x"],
        "cache": entries,
    }


def ingest(tmp_path: Path, *paths: Path, env: dict | None = None):
    rejects = tmp_path / "rejects.jsonl"
    args = ["ingest", *map(str, paths), "--data-dir", str(tmp_path / "store"), "--quiet"]
    result = runner.invoke(app, [*args, "--rejects", str(rejects)], env={**ENV, **(env or {})})
    lines = rejects.read_text().splitlines() if rejects.exists() else []
    return result, [json.loads(line) for line in lines]


def test_absurd_times_and_object_device_names_are_rejects_and_the_run_goes_on(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    entries = {
        str(i): {"block_size_x": 16 * i, "time": 1e308 if i % 3 == 0 else float(i)}
        for i in range(1, 30)
    }
    (runs / "a_huge_times.json").write_text(json.dumps(cache("NVIDIA A100-PCIE-40GB", entries)))
    (runs / "b_object_device.json").write_text(json.dumps(cache({"name": "A100"}, entries)))
    good = {str(i): {"block_size_x": 16 * i, "time": float(i)} for i in range(1, 9)}
    (runs / "c_good.json").write_text(json.dumps(cache("NVIDIA A100-PCIE-40GB", good)))
    result, rejects = ingest(tmp_path, runs)
    assert result.exit_code == 0, result.output
    assert "read 2 trajectories: added 2" in result.output
    reasons = {(Path(r["path"]).name, r["reason"]) for r in rejects}
    assert sum(name == "a_huge_times.json" and "1e+308" in why for name, why in reasons) == 1
    assert len([r for r in rejects if r["path"].endswith("a_huge_times.json")]) == 9
    assert any(name == "b_object_device.json" and "device_name" in why for name, why in reasons)


def test_symlink_loops_end_and_each_file_is_stored_once(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    good = {str(i): {"block_size_x": 16 * i, "time": float(i)} for i in range(1, 9)}
    (runs / "a100.json").write_text(json.dumps(cache("NVIDIA A100-PCIE-40GB", good)))
    os.symlink(".", runs / "a")
    os.symlink(".", runs / "b")
    result, rejects = ingest(tmp_path, runs)
    assert result.exit_code == 0, result.output
    assert "read 1 trajectories: added 1" in result.output and not rejects


def test_gzip_bomb_is_rejected_at_the_configured_limit(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    header = gzip.compress(b'{"device_name": "NVIDIA A100", "tune_params_keys": ["x"], ')
    bomb.write_bytes(header + gzip.compress(b" " * 2**20) * 64)  # 64 MiB of spaces in 64 KiB
    good = tmp_path / "good.json"
    entries = {str(i): {"block_size_x": 16 * i, "time": float(i)} for i in range(1, 9)}
    good.write_text(json.dumps(cache("NVIDIA A100-PCIE-40GB", entries)))
    limit = {"TUNEMEM_INGEST_MAX_FILE_BYTES": str(2**20)}
    result, rejects = ingest(tmp_path, bomb, good, env=limit)
    assert result.exit_code == 0, result.output
    (reject,) = rejects
    assert reject["path"] == str(bomb) and "1,048,576 decompressed bytes" in reject["reason"]
    assert "read 1 trajectories: added 1" in result.output
