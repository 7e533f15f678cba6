"""docs/triton.md's examples run as written (under the Triton interpreter on the CPU),
against a live memory at the address it names, and its run reaches the memory."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from tunemem.bench.common.memory_server import LiveService  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "triton.md"
pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="runs Triton's interpreter on the CPU"
)


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def run_block(code: str, url: str, path: Path) -> dict:
    """Run a block as a file of its own (Triton's interpreter reads a kernel's source back)."""
    path.write_text(code.replace("http://127.0.0.1:8000", url))
    return runpy.run_path(str(path), run_name="docs_example")


def test_the_page_example_runs_against_a_live_memory(tmp_path, capsys):
    example = python_blocks()[0]
    assert 'memory_url="http://127.0.0.1:8000"' in example
    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    try:
        namespace = run_block(example, live.url, tmp_path / "example.py")
        tuning = namespace["scale_kernel"]._tunemem
        assert tuning.flush(30.0)
        # An empty memory has nothing for this kernel: every configuration, one warning.
        assert tuning.last_decision["given"] == 12
        (report,) = tuning.reports
        assert report["sent"] and len(report["trajectory"]["attempts"]) == 12
        assert "'given': 12" in capsys.readouterr().out
        from tunemem.agent_client.client import MemoryClient

        with MemoryClient(live.url) as client:
            assert client.health()["counts"]["trajectories"] == 1

        namespace = run_block(python_blocks()[1], live.url, tmp_path / "hooked.py")
        negate = namespace["negate_kernel"]._tunemem
        assert negate.flush(30.0)
        assert negate.last_decision["given"] == 4 and negate.reports[0]["sent"]
        with MemoryClient(live.url) as client:
            assert client.health()["counts"]["trajectories"] == 2
    finally:
        live.close()


def test_the_capture_section_runs_against_a_live_memory(tmp_path, capsys):
    """`tunemem capture -- python my_script.py` as printed (a real subprocess, under the
    interpreter), then the in-code capture and `prune_configs_by` blocks; the memory ends up
    holding the script's two keys, twice (one per run), with the interpreter marked."""
    import subprocess
    import sys

    from tunemem.agent_client.client import MemoryClient

    text = DOC.read_text()
    section = text[text.index("## Capture Triton's own autotuner") :]
    script, in_code, pruned = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    (command,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    try:
        (tmp_path / "my_script.py").write_text(script)
        line = command.strip().replace("http://127.0.0.1:8000", live.url)
        line = line.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=tmp_path,
            env={**os.environ, "TRITON_INTERPRET": "1"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        with MemoryClient(live.url) as client:
            assert client.health()["counts"]["trajectories"] == 2

        sys.path.insert(0, str(tmp_path))
        try:
            run_block(in_code, live.url, tmp_path / "in_code.py")
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("my_script", None)
            from tunemem.agent_client.tuners.triton import capture as triton_capture

            for capture in list(triton_capture._INSTALLED):
                capture.uninstall()
        assert "'captured': 2, 'sent': 2" in capsys.readouterr().out
        with MemoryClient(live.url) as client:
            assert client.health()["counts"]["trajectories"] == 4

        namespace = run_block(pruned, live.url, tmp_path / "pruned.py")
        prune = namespace["halve_kernel"].early_config_prune
        assert prune.top_k == 2 and prune.memory_url == live.url
    finally:
        live.close()
