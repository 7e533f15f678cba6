"""`tunemem ingest` where its output is no terminal (a log, CI): the progress bar draws nothing
there, so a line says how far it is at least every few seconds (issue 39, first hour: 45 s of
silence before)."""

from __future__ import annotations

import time

from typer.testing import CliRunner

from tunemem.cli import ingest as ingest_cli
from tunemem.cli.app import app
from tunemem.ingest.samples import SAMPLES_DIR


def test_ingest_without_a_terminal_says_how_far_it_is(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ingest_cli, "HEARTBEAT_S", 0.05)
    real = ingest_cli.read_any

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.2)  # a slow file, as a large cache is
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_cli, "read_any", slow)
    args = ["ingest", str(SAMPLES_DIR / "vllm_fused_moe"), "--data-dir", str(tmp_path / "s")]
    done = CliRunner().invoke(
        app, args, env={"TUNEMEM_EMBEDDER": "hashing", "TUNEMEM_INDEX": "memory"}
    )
    assert done.exit_code == 0, done.output
    beats = [line for line in done.output.splitlines() if line.startswith("ingest: ")]
    assert beats and "files" in beats[0] and "records" in beats[0], done.output
    quiet = CliRunner().invoke(app, [*args, "--quiet"], env={"TUNEMEM_EMBEDDER": "hashing"})
    assert not [line for line in quiet.output.splitlines() if line.startswith("ingest: ")]
