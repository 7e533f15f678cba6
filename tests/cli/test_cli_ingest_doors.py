"""`tunemem ingest` and unreadable inputs (issue #22, defect 7): an unreadable file, named on the
command line or found in a folder, is a reject that says it is unreadable, and the good file
beside it is stored; an unwritable `--rejects` path is a message, never a traceback. Inputs
are synthetic, written by the tests. (Tests run as root, for whom no permission bit makes a
file unreadable; /proc/self/mem is a regular file whose first byte cannot be read by anyone.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tunemem.cli.app import app

runner = CliRunner()
ENV = {"TUNEMEM_EMBEDDER": "hashing", "TUNEMEM_INDEX": "memory"}
UNREADABLE = Path("/proc/self/mem")
pytestmark = pytest.mark.skipif(not UNREADABLE.exists(), reason="needs Linux /proc")


def good_cache(path: Path) -> Path:
    entries = {str(i): {"block_size_x": 16 * i, "time": float(i)} for i in range(1, 9)}
    doc = {
        "device_name": "NVIDIA A100-PCIE-40GB",
        "kernel_name": "vector_add_kernel",
        "tune_params_keys": ["block_size_x"],
        "cache": entries,
    }
    path.write_text(json.dumps(doc))
    return path


def run(tmp_path: Path, *paths: Path, rejects: Path | None = None):
    rejects = rejects or tmp_path / "rejects.jsonl"
    args = ["ingest", *map(str, paths), "--data-dir", str(tmp_path / "store"), "--quiet"]
    return runner.invoke(app, [*args, "--rejects", str(rejects)], env=ENV), rejects


@pytest.mark.parametrize("where", ["named", "in a folder"])
def test_an_unreadable_file_is_a_reject_and_the_good_file_is_stored(tmp_path, where):
    runs = tmp_path / "runs"
    runs.mkdir()
    good = good_cache(runs / "good.json")
    if where == "named":
        result, rejects = run(tmp_path, UNREADABLE, good)
        named = str(UNREADABLE)
    else:
        (runs / "a_unreadable.json").symlink_to(UNREADABLE)
        result, rejects = run(tmp_path, runs)
        named = str(runs / "a_unreadable.json")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    assert "added 1" in result.output
    lines = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["path"], r["position"]) for r in lines] == [(named, "file")]
    assert lines[0]["reason"].startswith("unreadable")


@pytest.mark.parametrize("target", ["missing-folder/rejects.jsonl", "a-folder"])
def test_an_unwritable_rejects_path_is_a_message_before_anything_is_read(tmp_path, target):
    (tmp_path / "a-folder").mkdir()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result, _ = run(tmp_path, bad, good_cache(tmp_path / "good.json"), rejects=tmp_path / target)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "--rejects" in result.output and "cannot be written" in result.output
    assert not (tmp_path / "store").exists() or "added" not in result.output
