"""POST /v1/trajectories parses with the native format's own reader rules
(`ingest.readers.native.parse_record`): an upload is refused for the reason a file's line
would be, and a refused batch stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.ingest.readers.native import NativeRecordError, parse_record

H200 = Path(__file__).resolve().parents[3] / "bench/results/h200/rmsnorm.jsonl"


def good() -> dict:
    return json.loads(H200.read_text().splitlines()[0])


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.pop("version"),
        lambda t: t.update(version=99),
        lambda t: t.update(version="1"),
        lambda t: t.pop("task"),
        lambda t: t["task"].update(op=""),
        lambda t: t.update(attempts=[]),
    ],
    ids=["no version", "newer version", "string version", "no task", "empty op", "no attempts"],
)
def test_a_bad_trajectory_is_refused_for_the_readers_reason(client, service, change):
    bad = good()
    change(bad)
    response = client.post("/v1/trajectories", json={"trajectories": [good(), bad]})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_trajectory"
    assert body["message"].startswith("trajectories[1]: ")
    if bad.get("attempts"):  # the reader's own reason, word for word
        with pytest.raises(NativeRecordError) as reason:
            parse_record(bad)
        assert body["message"] == f"trajectories[1]: {reason.value}"
    assert service.counts()["trajectories"] == 0  # the good one was not stored either
