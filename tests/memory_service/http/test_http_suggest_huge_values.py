"""POST /v1/suggest with a parameter value of about -1e155 or beyond (issue 39, case 8), where
it once gave a NaN 500: on the bundled convolution family, which has a performance model (the
A100 and MI250X caches, real measurements, ingest/samples/LICENSES.md), such a space answers
200 with configurations of the space, with observations and without, on every call.

The 200 was there before this test (case 1's fix: a model failing on a request is left out of
that answer); the model itself failing on every such request (a squared distance overflowing)
was seen failing here first.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.service import MemoryService

BASE = {
    "block_size_y": 1,
    "tile_size_x": 1,
    "tile_size_y": 1,
    "read_only": 0,
    "use_padding": 0,
    "use_shmem": 0,
    "use_cmem": 1,
    "filter_height": 15,
    "filter_width": 15,
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):  # type: ignore[no-untyped-def]
    store = tmp_path_factory.mktemp("store")
    settings = Settings(data_dir=store, embedder="hashing", index="memory", model_wait_s=60)
    service = MemoryService(settings)
    service.ingest(read_any(sorted((SAMPLES_DIR / "kerneltuner" / "convolution").glob("*.gz"))))
    with TestClient(create_app(service)) as test_client:
        yield test_client
    service.close()


@pytest.mark.parametrize("huge", [-1e155, -1e300, -1.7976931348623157e308, 1e300])
def test_a_huge_parameter_value_answers_with_configurations_of_the_space(client, huge, caplog):  # type: ignore[no-untyped-def]
    space = {name: [value] for name, value in BASE.items()} | {"block_size_x": [16, 32, huge]}
    tried = [
        {"config": {**BASE, "block_size_x": huge}, "latency_ms": 2.0},
        {"config": {**BASE, "block_size_x": 16}, "latency_ms": 1.0},
    ]
    for observations in ([], tried[1:], tried, tried):
        body = {
            "task": {"op": "convolution"},
            "context": {"chip": "w6600"},
            "space": {"params": space},
            "k": 3,
            "observations": observations,
        }
        answer = client.post("/v1/suggest", json=body)
        assert answer.status_code == 200, answer.text
        suggested = [s["config"]["block_size_x"] for s in answer.json()["suggestions"]]
        assert suggested and set(suggested) <= {16, 32, huge}
    # The model answers too: such a value is far from the known ones, not an overflow that
    # left the model out of every answer (seen failing: "array must not contain infs or NaNs").
    failed = [r for r in caplog.records if "failed on a request" in r.getMessage()]
    assert not failed, failed[0].exc_text
