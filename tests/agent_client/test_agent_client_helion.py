"""The Helion integration: seed ranking by hand-computed numbers, seeds and a filter from a live
memory filled by a real Helion log (an H100 run), the remote cache over HTTP, and the
untrusted-memory policy against a dead and a malformed memory. Helion itself is not needed
(only `seed_configs` builds `helion.Config`s; its test is skipped without Helion)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.tuners.helion import (
    HelionMemory,
    MemoryUnavailableWarning,
    Timing,
    rank_seeds,
    shape_of,
)
from tunemem.agent_client.tuners.helion.ranking import shape_distance
from tunemem.agent_client.tuners.helion.remote_cache import MemoryCacheBackend, entry_lesson
from tunemem.ingest.readers import read_any
from tunemem.ingest.readers.helion_autotune import unflatten_config
from tunemem.ingest.records import TrajectoryRecord

pytest.importorskip("tunemem.memory_service.http.app")
from tunemem.bench.common.memory_server import LiveService  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "ingest" / "fixtures" / "helion_autotune"
LOG = FIXTURES / "rms_norm_0_quick.csv"


# -- ranking (pure) ---------------------------------------------------------------------------

C1 = {"block_sizes": [64, 64, 32], "num_warps": 4}
C2 = {"block_sizes": [128, 128, 32], "num_warps": 8}
C3 = {"block_sizes": [128, 256, 64], "num_warps": 8}
SMALL = (1024, 1024, 1024)
LARGE = (4096, 4096, 4096)
MEMORY = [
    Timing("mm", SMALL, "h100", C1, 1.0),  # relative speed 0.8 at SMALL
    Timing("mm", SMALL, "h100", C2, 0.8),  # 1.0 at SMALL
    Timing("mm", LARGE, "h100", C2, 30.0),  # 25/30 at LARGE
    Timing("mm", LARGE, "h100", C3, 25.0),  # 1.0 at LARGE
    Timing("softmax", SMALL, "h100", {"block_sizes": [1]}, 0.1),  # another kernel: ignored
]


def test_shape_distance_is_summed_log2_ratios() -> None:
    assert shape_distance((1024, 1024), (4096, 1024)) == 2.0
    assert shape_distance((8,), (8, 2)) == 1.0


def test_seeds_by_hand_equal_distance() -> None:
    # Target 2048^3: both shapes 3 units away, weight 1/(1+3) = 0.25 each.
    seeds = rank_seeds(MEMORY, kernel="mm", shape=(2048, 2048, 2048), device="h100", k=4)
    assert [s.config for s in seeds] == [C2, C3, C1]
    # C2: mean (1.0 + 25/30) / 2 = 0.9167, support 1; C3: 1.0 * (0.5 + 0.5 * 0.5); C1: 0.8 * 0.75
    assert [round(s.score, 4) for s in seeds] == [0.9167, 0.75, 0.6]
    assert seeds[0].reason == "best at [1024, 1024, 1024] on h100"


def test_seeds_nearest_shape_first() -> None:
    # Target (4096, 4096, 2048): LARGE 1 unit away (weight 1/2), SMALL 5 (weight 1/6).
    seeds = rank_seeds(MEMORY, kernel="mm", shape=(4096, 4096, 2048), device="h100", k=2)
    # k // 2 = 1 shape's best (the nearest's), then the best score: C2's mean
    # (0.5 * 25/30 + 1/6 * 1.0) / (2/3) = 0.875 at full support; C1 0.8 * 0.625 = 0.5.
    assert [s.config for s in seeds] == [C3, C2]
    assert [round(s.score, 4) for s in seeds] == [0.875, 0.875]
    seeds = rank_seeds(MEMORY, kernel="mm", shape=(4096, 4096, 2048), device="h100", k=4)
    assert [s.config for s in seeds] == [C3, C2, C1]
    assert rank_seeds(MEMORY, kernel="nothing", shape=SMALL, device="h100") == []


def test_another_chip_counts_half() -> None:
    memory = [
        Timing("mm", SMALL, "a100", C1, 1.0),
        Timing("mm", SMALL, "a100", C2, 2.0),
        Timing("mm", SMALL, "h100", C2, 1.0),
        Timing("mm", SMALL, "h100", C1, 2.0),
    ]
    # At SMALL: on h100 C2 is 1.0 and C1 0.5 (weight 1); on a100 C1 1.0, C2 0.5 (weight 0.5).
    seeds = rank_seeds(memory, kernel="mm", shape=SMALL, device="h100", k=4)
    assert [s.config for s in seeds] == [C2, C1]
    # C2: (1 * 1.0 + 0.5 * 0.5) / 1.5; C1: (1 * 0.5 + 0.5 * 1.0) / 1.5
    assert [round(s.score, 4) for s in seeds] == [0.8333, 0.6667]


def test_shape_key_is_every_tensor_argument_in_order() -> None:
    class Tensor:
        def __init__(self, *shape: int) -> None:
            self.shape = shape

    assert shape_of([Tensor(4096, 4096), Tensor(4096), 1e-5]) == (4096, 4096, 4096)
    assert shape_of((16384, 2048, 2048)) == (16384, 2048, 2048)


# -- against a live memory --------------------------------------------------------------------


@pytest.fixture
def live() -> Iterator[str]:
    """A memory that ingested the real H100 log of RMSNorm at 4096x4096 (Helion alone); the
    service's default near-duplicate threshold, so lessons merge as they would in use."""
    service = LiveService({"index": "memory", "embedder": "hashing"})
    try:
        records = [r for r in read_any([LOG]) if isinstance(r, TrajectoryRecord)]
        with MemoryClient(service.url) as client:
            assert client.upload_trajectories([r.to_dict() for r in records])["lessons_added"] > 0
        yield service.url
    finally:
        service.close()


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


def test_seeds_from_a_memory_filled_by_a_helion_log(live: str) -> None:
    (traj,) = [r for r in read_any([LOG]) if isinstance(r, TrajectoryRecord)]
    best = min(traj.attempts, key=lambda a: a.latency_ms or float("inf"))
    memory = HelionMemory(live)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seeds = memory.seed_dicts("rms_norm", (16384, 2048, 2048), chip="NVIDIA H100", k=4)
    assert 1 <= len(seeds) <= 4
    assert seeds[0] == unflatten_config(best.params)  # the nearest shape's best comes first
    assert isinstance(seeds[0]["block_sizes"], list) and "num_warps" in seeds[0]
    assert memory.last_seeds[0].reason == "best at [4096, 4096, 4096] on h100"
    # A kernel the memory has never seen: no seeds, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert memory.seed_dicts("matmul", (64, 64, 64, 64), chip="NVIDIA H100") == []


def test_seed_configs_builds_helion_configs(live: str) -> None:
    helion = pytest.importorskip("helion", reason="builds helion.Config objects")
    from tunemem.agent_client.tuners.helion import seed_configs

    configs = seed_configs("rms_norm", (16384, 2048, 2048), live, chip="NVIDIA H100", k=2)
    assert configs and all(isinstance(c, helion.Config) for c in configs)


def test_config_filter_skips_what_failure_lessons_say_fails(live: str) -> None:
    failure = {
        "kind": "failure",
        "text": "rms_norm with num_warps 32 and block size 64 fails to compile on the H100",
        "hint": {"avoid": {"num_warps": 32, "block_sizes[0]": 64}, "failure_rate": 1.0},
        "applicability": {"op": "rms_norm", "chips": ["h100"]},
    }
    with MemoryClient(live) as client:
        client.add_lessons([failure])
    keep = HelionMemory(live).config_filter("rms_norm", chip="NVIDIA H100")
    assert keep is not None

    class Config:  # stands in for helion.Config: the filter reads `.config`
        def __init__(self, **config: Any) -> None:
            self.config = config

    bad = Config(block_sizes=[64], num_warps=32)
    good = Config(block_sizes=[32], num_warps=32)
    assert keep(bad) is None and keep(good) is good
    # Another chip: that failure lesson does not apply.
    assert HelionMemory(live).config_filter("rms_norm", chip="NVIDIA A100-SXM4-80GB") is None


def test_a_dead_memory_costs_one_warning_and_helion_goes_on_alone() -> None:
    memory = HelionMemory(dead_url(), timeout_s=2.0)
    with pytest.warns(MemoryUnavailableWarning, match="Helion autotunes on its own"):
        assert memory.seed_configs("rms_norm", (4096, 4096, 4096), chip="NVIDIA H100") == []
    assert memory.error
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # left alone: no second warning, no second wait
        assert memory.seed_dicts("rms_norm", (4096, 4096, 4096), chip="NVIDIA H100") == []
        assert memory.config_filter("rms_norm", chip="NVIDIA H100") is None
    assert time.monotonic() - started < 0.5


class Malformed:
    """A memory that answers, but nonsense."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def get(self, path: str, params: dict[str, Any]) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_malformed_answers_are_no_seeds_never_an_error() -> None:
    garbage_lessons = {
        "data": [
            "not a lesson",
            {
                "hint": {"config": {"a[]": 3}, "latency_ms": 1.0},
                "applicability": {"signature": {"shape": [1]}},
            },
            {"hint": {"config": {"x": 1}, "latency_ms": "fast"}, "applicability": {}},
            {
                "hint": {"config": {"x": 1}, "latency_ms": 1.0},
                "applicability": {"signature": {"shape": [True]}},
            },
        ]
    }
    memory = HelionMemory("http://unused", client=Malformed([garbage_lessons]))
    assert memory.seed_dicts("k", (1,), chip="h100") == []
    memory = HelionMemory("http://unused", client=Malformed([["a", "list"]]))
    with pytest.warns(MemoryUnavailableWarning):
        assert memory.seed_dicts("k", (1,), chip="h100") == []
    memory = HelionMemory("http://unused", client=Malformed([RuntimeError("boom")]))
    with pytest.warns(MemoryUnavailableWarning, match="boom"):
        assert memory.config_filter("k", chip="h100") is None


# -- the remote cache --------------------------------------------------------------------------


def helion_entry(hardware: str = "NVIDIA H100", block: int = 4) -> str:
    """A cache entry as Helion's LocalAutotuneCache.put writes it (config as JSON text)."""
    config = {"block_sizes": [block], "num_warps": 8, "indexing": ["pointer", "pointer"]}
    return json.dumps(
        {
            "config": json.dumps(config, indent=2),
            "key": {
                "type": "LooseAutotuneCacheKey",
                "fields": {
                    "specialization_key": "(torch.float16, (4096, 4096))",
                    "kernel_source_hash": "9f" * 32,
                    "hardware": hardware,
                    "runtime_name": "13.0",
                    "config_spec_hash": "ab" * 32,
                },
            },
            "flat_config": json.dumps([block, 8, "pointer", "pointer"]),
        }
    )


def test_remote_cache_round_trip_over_http(live: str) -> None:
    backend = MemoryCacheBackend(live)
    first, second = helion_entry(block=4), helion_entry(block=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.get("k" * 64) is None
        backend.put("k" * 64, first)
        backend.put("j" * 64, second)
        assert backend.get("k" * 64) == first and backend.get("j" * 64) == second
        assert list(backend.list(max_results=10)) == [second, first]  # newest first
        assert list(backend.list(max_results=1)) == [second]
        backend.put("x" * 64, "not an entry")  # skipped: no lesson, no warning
        backend.put("y" * 64, json.dumps({"config": "{}", "key": {"fields": []}}))
        assert backend.get("x" * 64) is None and len(list(backend.list())) == 2
    lesson = entry_lesson("k" * 64, first)
    assert lesson["hint"]["config"]["block_sizes[0]"] == 4
    assert lesson["applicability"]["chips"] == ["h100"]


def test_remote_cache_against_a_dead_memory_warns_once() -> None:
    backend = MemoryCacheBackend(dead_url(), timeout_s=2.0)
    with pytest.warns(MemoryUnavailableWarning, match="local cache goes on alone"):
        assert backend.get("k" * 64) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backend.put("k" * 64, helion_entry())  # dropped while the memory is left alone
        assert list(backend.list()) == []


def test_remote_cache_needs_an_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUNEMEM_HELION_URL", raising=False)
    with pytest.raises(ValueError, match="TUNEMEM_HELION_URL"):
        MemoryCacheBackend()


def test_helion_loads_the_backend_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("helion", reason="Helion's own loader")
    from helion.autotuner.remote_cache import RemoteCacheBackend, _load_remote_backend

    monkeypatch.setenv(
        "HELION_REMOTE_CACHE_BACKEND",
        "tunemem.agent_client.tuners.helion.remote_cache.MemoryCacheBackend",
    )
    monkeypatch.setenv("TUNEMEM_HELION_URL", dead_url())
    backend = _load_remote_backend()
    assert isinstance(backend, MemoryCacheBackend) and isinstance(backend, RemoteCacheBackend)


def test_importing_the_integration_does_not_import_helion() -> None:
    code = "import sys, tunemem.agent_client.tuners.helion; print('helion' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
