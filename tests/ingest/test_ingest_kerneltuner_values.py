"""Kernel Tuner entries whose parameter values are not scalars of the parameter's kind
(issue #22, defect 10): a string where the declared values are numbers, null, a list or an
object is a reject with its reason, never a feasible attempt. Synthetic caches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.readers import read_any
from tunemem.ingest.records import RejectedRecord, TrajectoryRecord


def read(tmp_path: Path, value: object) -> tuple[list[TrajectoryRecord], list[RejectedRecord]]:
    doc = {
        "device_name": "NVIDIA A100-PCIE-40GB",
        "kernel_name": "vector_add_kernel",
        "tune_params_keys": ["block_size_x", "layout"],
        "tune_params": {"block_size_x": [16, 32, 64], "layout": ["row", "col"]},
        "cache": {
            "16,row": {"block_size_x": 16, "layout": "row", "time": 1.0},
            "32,row": {"block_size_x": value, "layout": "row", "time": 0.5},
        },
    }
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(doc))
    out = list(read_any([path]))
    return (
        [r for r in out if isinstance(r, TrajectoryRecord)],
        [r for r in out if isinstance(r, RejectedRecord)],
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [("fast", "number"), (None, "null"), ([16], "list"), ({"x": 16}, "object")],
    ids=["string for a number", "null", "list", "dict"],
)
def test_a_non_scalar_or_mistyped_parameter_value_is_a_reject(tmp_path, value, why):
    runs, rejects = read(tmp_path, value)
    assert [len(r.attempts) for r in runs] == [1]
    assert runs[0].attempts[0].params == {"block_size_x": 16, "layout": "row"}
    assert len(rejects) == 1 and "block_size_x" in rejects[0].reason
    assert why in rejects[0].reason


def test_strings_are_values_where_the_parameter_declares_strings(tmp_path):
    runs, rejects = read(tmp_path, 32)
    assert rejects == [] and len(runs[0].attempts) == 2
