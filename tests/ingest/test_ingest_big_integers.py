"""Integers of 2^63 and up (or below -2^63) in an ingested run are rejects, never read as floats
(issue 39, case 8: the docs promise it for ingest as for suggest): a native line's parameter
value, and a Kernel Tuner cache's entry and declared values. A run with a parameter value of
2^63 - 1, the largest 64-bit integer, is taken.

This test was written after the fix, so it guards the behaviour rather than having been seen
failing. The runs and the cache are synthetic, written by the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.readers import read_any
from tunemem.ingest.records import RejectedRecord, TrajectoryRecord


def _native(value: int) -> dict:
    return {
        "version": 1,
        "source_format": "native",
        "source": f"synthetic/{value}",
        "task": {"op": "softmax"},
        "context": {"chip": "a100", "backend": "cuda"},
        "attempts": [
            {"index": 0, "params": {"BLOCK": value}, "latency_ms": 1.0},
            {"index": 1, "params": {"BLOCK": 1}, "latency_ms": 2.0},
        ],
    }


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1])
def test_a_native_run_with_an_integer_past_64_bits_is_a_reject(tmp_path: Path, value: int):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(_native(value)) + "\n")
    (record,) = list(read_any([path]))
    assert isinstance(record, RejectedRecord)
    assert "beyond 64 bits" in record.reason


def test_the_largest_64_bit_integer_is_taken(tmp_path: Path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(_native(2**63 - 1)) + "\n")
    (record,) = list(read_any([path]))
    assert isinstance(record, TrajectoryRecord)
    assert record.attempts[0].params["BLOCK"] == 2**63 - 1


def test_a_kernel_tuner_cache_with_an_integer_past_64_bits_rejects_it(tmp_path: Path):
    cache = {
        "version_number": "1.0",
        "tune_params_keys": ["B"],
        "tune_params": {"B": [1, 2**63]},
        "objective": "time",
        "device_name": "NVIDIA A100-PCIE-40GB",
        "kernel_name": "synthetic",
        "problem_size": [1],
        "cache": {"1": {"B": 1, "time": 1.0}, str(2**63): {"B": 2**63, "time": 0.5}},
    }
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(cache))
    records = list(read_any([path], "kerneltuner"))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    assert rejects and all("beyond 64 bits" in r.reason for r in rejects)
    taken = [r for r in records if isinstance(r, TrajectoryRecord)]
    assert all(
        isinstance(a.params["B"], int) and a.params["B"] < 2**63 for r in taken for a in r.attempts
    )
