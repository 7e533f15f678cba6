"""parse_json: the fast path and the standard parser agree on every document either accepts."""

from __future__ import annotations

import json
import math

import pytest

from tunemem.ingest.sources import parse_json


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, -3e-7, "x\\u00e9"], "b": {"c": null, "d": true}}',
        '{"time": 0.1234567890123456789, "k": [1e308, -0.0]}',
        '{"dup": 1, "dup": 2}',
    ],
)
def test_parse_json_matches_the_standard_parser(text: str) -> None:
    assert parse_json(text.encode()) == json.loads(text)


def test_documents_orjson_refuses_fall_back_to_the_standard_parser() -> None:
    # Kernel Tuner caches may hold NaN/Infinity and huge integers, which orjson rejects.
    doc = parse_json(
        b'{"t": NaN, "u": Infinity, "v": -Infinity, "w": 123456789012345678901234567890}'
    )
    assert math.isnan(doc["t"]) and doc["u"] == math.inf and doc["v"] == -math.inf
    assert doc["w"] == 123456789012345678901234567890


def test_invalid_json_still_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_json(b'{"a": ')
