"""docs/helion.md's CPU example runs as written against a live memory at the address it names
(the blocks marked for a GPU are skipped, and each says so)."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

pytest.importorskip("tunemem.memory_service.http.app")
from tunemem.bench.common.memory_server import LiveService  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "helion.md"
BLOCK = re.compile(
    r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S
)


def blocks() -> list[tuple[str, str, str]]:
    return [
        (m["lang"], m["body"], (m["mark"] or "").strip()) for m in BLOCK.finditer(DOC.read_text())
    ]


def test_every_gpu_block_is_marked_and_the_cpu_block_runs(tmp_path: Path, capsys) -> None:
    found = blocks()
    runnable = [(lang, body) for lang, body, mark in found if not mark.startswith("skip")]
    assert [lang for lang, _ in runnable] == ["python"]
    skipped = [mark for _, body, mark in found if mark.startswith("skip")]
    assert skipped and all("GPU" in mark for mark in skipped)
    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    cwd = Path.cwd()
    try:
        os.chdir(REPO)  # the example names the fixture by its path in the repository
        script = tmp_path / "example.py"
        script.write_text(runnable[0][1].replace("http://127.0.0.1:8000", live.url))
        namespace = runpy.run_path(str(script), run_name="docs_example")
        assert len(namespace["seeds"]) == 4
        printed = capsys.readouterr().out.splitlines()
        assert len(printed) == 5 and "best at [4096, 4096, 4096] on h100" in printed[0]
        # Memory first's plan: the memory holds three exemplars of 4096x4096, all near its best.
        assert printed[4] == (
            "True 3 of 3 configurations near the best at [4096, 4096, 4096] on h100, 3.00 away"
        )
    finally:
        os.chdir(cwd)
        live.close()
