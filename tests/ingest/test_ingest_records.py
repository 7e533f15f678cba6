"""Native trajectory dicts of the wrong shape are refused with a reason in words (which field
is missing or unknown, where), never a Python exception's repr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.readers import read_any
from tunemem.ingest.records import RecordShapeError, RejectedRecord, TrajectoryRecord

GOOD = {
    "version": 1,
    "source_format": "native",
    "source": "synthetic-test",
    "task": {"op": "softmax"},
    "context": {"chip": "a100", "backend": "cuda"},
    "attempts": [{"index": 0, "params": {"BLOCK": 64}, "latency_ms": 1.0}],
    "synthetic": True,
}


def _without(key: str) -> dict:
    return {k: v for k, v in GOOD.items() if k != key}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_without("source_format"), "missing field 'source_format'"),
        ({**GOOD, "task": {"kernel": "k"}}, "task: missing field 'op'"),
        ({**GOOD, "task": "softmax"}, "task must be a JSON object"),
        ({**GOOD, "context": {"chip": "a100"}}, "context: missing field 'backend'"),
        (
            {**GOOD, "attempts": [{"index": 0, "latency": 1.0}]},
            "attempts[0]: unknown field 'latency'",
        ),
        ({**GOOD, "attempts": {"index": 0}}, "attempts must be a list"),
    ],
)
def test_wrong_shapes_name_the_field(data: dict, message: str) -> None:
    with pytest.raises(RecordShapeError) as caught:
        TrajectoryRecord.from_dict(data)
    assert str(caught.value).startswith(message)
    assert "KeyError" not in str(caught.value) and "TypeError" not in str(caught.value)


def test_good_record_round_trips() -> None:
    record = TrajectoryRecord.from_dict(GOOD)
    assert TrajectoryRecord.from_dict(record.to_dict()) == record


def test_native_reader_rejects_in_words(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"  # synthetic
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(_without("source_format")) + "\n")
    records = list(read_any([path]))
    assert isinstance(records[0], TrajectoryRecord)
    reject = records[1]
    assert isinstance(reject, RejectedRecord) and reject.position == "line 2"
    assert reject.reason == "not a trajectory record: missing field 'source_format'"
