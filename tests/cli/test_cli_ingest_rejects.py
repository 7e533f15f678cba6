"""`tunemem ingest` keeps each run's rejects in a file of its own in the data directory (they
went to ./tunemem-rejects.jsonl, overwritten by every run and not ignored by git), and Ctrl-C
says what is kept and that the same command goes on (issue 31). SYNTHETIC files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tunemem.cli import ingest as ingest_command
from tunemem.cli.app import app

ENV = {"TUNEMEM_EMBEDDER": "hashing", "TUNEMEM_INDEX": "memory"}
runner = CliRunner()


def bad_cache(path: Path) -> Path:
    """A Kernel Tuner cache with one usable entry and one that lacks a parameter."""
    path.write_text(
        json.dumps(
            {
                "device_name": "NVIDIA A100-PCIE-40GB",
                "kernel_name": "synthetic_kernel",
                "tune_params_keys": ["bx", "tx"],
                "cache": {
                    "64,1": {"bx": 64, "tx": 1, "time": 1.0},
                    "32,1": {"bx": 32, "time": 2.0},
                },
            }
        )
    )
    return path


def test_each_run_keeps_its_rejects_in_the_data_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "store"
    first = bad_cache(tmp_path / "first.json")
    second = bad_cache(tmp_path / "second.json")
    for path in (first, second):
        done = runner.invoke(
            app, ["ingest", str(path), "--quiet", "--data-dir", str(data)], env=ENV
        )
        assert done.exit_code == 0, done.output
    assert not (tmp_path / "tunemem-rejects.jsonl").exists()
    files = sorted((data / "rejects").glob("ingest-*.jsonl"))
    assert len(files) == 2  # one per run, none overwritten
    sources = [Path(json.loads(f.read_text())["path"]).name for f in files]
    assert sorted(sources) == ["first.json", "second.json"]
    assert ".tunemem/" in (Path(__file__).resolve().parents[2] / ".gitignore").read_text()


def test_ctrl_c_says_what_is_kept_and_how_to_go_on(tmp_path: Path, monkeypatch) -> None:
    def interrupted(*_args, **_kwargs) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_command, "_ingest_sources", interrupted)
    path = bad_cache(tmp_path / "cache.json")
    done = runner.invoke(
        app, ["ingest", str(path), "--quiet", "--data-dir", str(tmp_path / "store")], env=ENV
    )
    assert done.exit_code == 130
    text = " ".join(done.output.split())
    assert "interrupted: what was stored before is kept" in text
    assert "run the same command again" in text and "skipped" in text
