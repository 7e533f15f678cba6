"""An "open" Kernel Tuner cache (what an interrupted run leaves: entries ending in a comma,
the closing braces never written, and what Kernel Tuner itself reads back) is ingested as the
closed cache would be. It used to be rejected as invalid JSON (issue 31). SYNTHETIC caches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.errors import FileUnreadableError, FormatMismatchError
from tunemem.ingest.readers import kerneltuner
from tunemem.ingest.records import TrajectoryRecord


def write_caches(tmp_path: Path) -> tuple[Path, Path]:
    """A closed cache and the open file Kernel Tuner writes while it runs (invented times)."""
    entries = {
        f"{block},{tile}": {"block": block, "tile": tile, "time": 1.0 + block / 64 + tile / 8}
        for block in (32, 64, 128)
        for tile in (1, 2)
    }
    doc = {
        "device_name": "NVIDIA A100-PCIE-40GB",
        "kernel_name": "synthetic_kernel",
        "problem_size": [256],
        "tune_params_keys": ["block", "tile"],
        "tune_params": {"block": [32, 64, 128], "tile": [1, 2]},
        "objective": "time",
        "cache": entries,
    }
    closed = tmp_path / "closed.json"
    closed.write_text(json.dumps(doc))
    # Kernel Tuner's layout while it runs: the header, then one "key": entry, line per result.
    header = json.dumps({k: v for k, v in doc.items() if k != "cache"})[:-1]
    lines = [f"{json.dumps(k)}: {json.dumps(v)}," for k, v in entries.items()]
    opened = tmp_path / "open.json"
    opened.write_text(header + ', "cache": {\n' + "\n".join(lines) + "\n")
    return closed, opened


def test_an_open_cache_reads_as_the_closed_one(tmp_path: Path) -> None:
    closed, opened = write_caches(tmp_path)
    (closed_run,) = kerneltuner.read(closed)
    (open_run,) = kerneltuner.read(opened)
    assert isinstance(open_run, TrajectoryRecord) and isinstance(closed_run, TrajectoryRecord)
    assert [a.params for a in open_run.attempts] == [a.params for a in closed_run.attempts]
    assert [a.latency_ms for a in open_run.attempts] == [a.latency_ms for a in closed_run.attempts]
    assert open_run.evidence["open_cache"] is True and "open_cache" not in closed_run.evidence
    assert kerneltuner.detect(opened)


def test_an_open_cache_cut_inside_an_entry_is_still_refused(tmp_path: Path) -> None:
    _, opened = write_caches(tmp_path)
    opened.write_text(opened.read_text()[:-25])  # a half-written last line
    with pytest.raises(FileUnreadableError, match="not valid JSON"):
        list(kerneltuner.read(opened))


def test_an_open_cache_with_no_entry_yet_is_no_trajectory(tmp_path: Path) -> None:
    _, opened = write_caches(tmp_path)
    text = opened.read_text()
    opened.write_text(text[: text.index('"cache": {') + len('"cache": {')])
    with pytest.raises(FormatMismatchError, match="no usable configuration"):
        list(kerneltuner.read(opened))


def test_a_layout_with_no_usable_entry_is_one_file_level_line(tmp_path: Path) -> None:
    """A layout the reader does not know gave one reject per entry (301 for a real cache) and
    no line saying the layout was the problem (issue 31)."""
    closed, _ = write_caches(tmp_path)
    doc = json.loads(closed.read_text())
    # An invented future layout: the parameters nested under "params", times under "results".
    doc["cache"] = {
        key: {"params": {"block": e["block"], "tile": e["tile"]}, "results": {"t": e["time"]}}
        for key, e in doc["cache"].items()
    }
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(doc))
    records = []
    with pytest.raises(FormatMismatchError) as refused:
        records.extend(kerneltuner.read(newer))
    assert records == []  # no reject per entry
    text = str(refused.value)
    assert "unrecognised layout" in text and "none of its 6 entries" in text
    assert "'params'" in text and "['block', 'tile']" in text
