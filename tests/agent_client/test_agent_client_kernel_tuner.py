"""The Kernel Tuner strategy end to end in Kernel Tuner's simulation mode (`tune_cache`, which
replays a cache instead of a GPU) against a live tunemem server on a real port: the bundled
convolution caches (real measurements, ingest/samples/LICENSES.md). Memory of the A100 and
tuning the W6600; then the fallbacks when the memory is unreachable or empty."""

from __future__ import annotations

import gzip
import json
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tunemem.agent_client.tuners.kernel_tuner import MemoryStrategy, device_name
from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR, TARGETS_DIR

kernel_tuner = pytest.importorskip("kernel_tuner", reason="needs kernel_tuner (make install)")


@pytest.fixture
def live(make_service) -> Iterator[Callable[..., tuple[str, object]]]:
    """live(ingest=[paths]) starts a service on a free loopback port; returns (url, service)."""
    import uvicorn

    from tunemem.memory_service.http.app import create_app

    servers = []

    def start(ingest: list[Path] | None = None) -> tuple[str, object]:
        service = make_service()
        if ingest:
            service.ingest(read_any(ingest))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = uvicorn.Config(create_app(service), host="127.0.0.1", port=port)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}", service

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def w6600_cache(tmp_path: Path) -> tuple[Path, dict]:
    """The bundled W6600 cache, unpacked (Kernel Tuner reads plain JSON)."""
    path = tmp_path / "W6600.json"
    with gzip.open(TARGETS_DIR / "convolution" / "W6600.json.gz", "rt") as packed:
        path.write_text(packed.read())
    return path, json.loads(path.read_text())


def measured(doc: dict) -> dict[tuple, float]:
    keys = doc["tune_params_keys"]
    return {
        tuple(entry[k] for k in keys): entry["time"]
        for entry in doc["cache"].values()
        if isinstance(entry.get("time"), int | float)
    }


def test_strategy_tunes_from_memory_and_reports_outcomes_and_the_run(live, w6600_cache):
    url, service = live([SAMPLES_DIR / "kerneltuner" / "convolution" / "A100.json.gz"])
    before = service.counts()
    path, doc = w6600_cache
    strategy = MemoryStrategy(url=url, k=4, chip="W6600", warn=pytest.fail)
    results, _ = kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": 10}, quiet=True
    )
    keys = doc["tune_params_keys"]
    tried = [tuple(r[k] for k in keys) for r in results]
    assert len(tried) == 10 and len(set(tried)) == 10
    assert set(tried) <= set(measured(doc))  # failed configurations are not in the space
    run = strategy.last_run
    assert run is not None and run.sources[0] == "exemplar"

    after = service.counts()
    assert run.reported >= 4  # at least the first round came from the memory
    assert after["outcomes"] - before["outcomes"] == run.reported
    assert after["trajectories"] - before["trajectories"] == 1
    assert after["attempts"] - before["attempts"] == 10  # the run, every evaluation
    # The lesson behind the first evaluation holds that outcome in its history.
    credited = [
        lesson.id
        for lesson in service.list_lessons().data
        if service.lesson_history(lesson.id).outcomes
    ]
    assert credited
    # Each outcome carries the configuration tried and the spread of Kernel Tuner's timings.
    times = {tuple(e[k] for k in keys): e["times"] for e in doc["cache"].values() if "times" in e}
    outcomes = [o for lid in credited for o in service.lesson_history(lid).outcomes]
    for outcome in outcomes:
        assert outcome.config is not None and set(outcome.config) == set(keys)
        runs = times.get(tuple(outcome.config[k] for k in keys))
        if outcome.latency_ms is not None and runs and len(runs) > 1:
            assert outcome.repetitions == len(runs)
            assert outcome.latency_spread_ms == pytest.approx(statistics.pstdev(runs))
    assert any(o.latency_spread_ms for o in outcomes)


def test_unreachable_memory_warns_once_and_tuning_goes_on(w6600_cache):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nothing listens here once the probe closes
    warnings: list[str] = []
    path, doc = w6600_cache
    strategy = MemoryStrategy(url=f"http://127.0.0.1:{closed}", timeout_s=2, warn=warnings.append)
    results, _ = kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": 12}, quiet=True
    )
    keys = doc["tune_params_keys"]
    tried = {tuple(r[k] for k in keys) for r in results}
    assert len(results) == 12 and len(tried) == 12 and tried <= set(measured(doc))
    # The tuners' one wording (memory_policy.MemoryGuard), as Triton and tune moe say it.
    (warning,) = warnings
    assert "unavailable (suggest: " in warning and "own search continues" in warning


def test_empty_memory_warns_once_and_searches(live, w6600_cache):
    url, service = live()
    warnings: list[str] = []
    path, _ = w6600_cache
    strategy = MemoryStrategy(url=url, warn=warnings.append)
    results, _ = kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": 8}, quiet=True
    )
    assert len(results) == 8
    assert len(warnings) == 1 and "holds nothing" in warnings[0]
    assert service.counts()["trajectories"] == 1  # the run itself still goes into the memory


@pytest.mark.parametrize("device_name", ["", "gfx1032"])
def test_a_device_kernel_tuner_cannot_name_is_stored_with_the_backend_of_its_language(
    live, w6600_cache, tmp_path: Path, device_name: str
):
    # Kernel Tuner names some AMD GPUs by an empty string or a gfx target; the run used to be
    # refused on upload (422 unknown backend 'unknown') and the memory never learnt from it.
    url, service = live()
    path, doc = w6600_cache
    doc["device_name"] = device_name
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    warnings: list[str] = []
    strategy = MemoryStrategy(url=url, warn=warnings.append)
    kernel_tuner.tune_cache(
        str(renamed),
        strategy=strategy,
        strategy_options={"max_fevals": 6},
        quiet=True,
        lang="HIP",
    )
    assert not any("upload" in w for w in warnings), warnings
    assert service.counts()["trajectories"] == 1
    run = strategy.last_run
    assert run is not None and run.chip.backend == "hip" and not run.chip.known


def test_a_run_whose_backend_cannot_be_told_is_not_uploaded_and_says_why(
    live, w6600_cache, tmp_path: Path
):
    url, service = live()
    path, doc = w6600_cache
    doc["device_name"] = ""
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    warnings: list[str] = []
    strategy = MemoryStrategy(url=url, warn=warnings.append)
    results, _ = kernel_tuner.tune_cache(
        str(renamed), strategy=strategy, strategy_options={"max_fevals": 4}, quiet=True
    )
    assert len(results) == 4  # the tuning itself is untouched
    assert service.counts()["trajectories"] == 0
    assert any("not uploaded" in w and "lang=" in w for w in warnings)


def test_device_name_reads_the_runner_or_warns_once() -> None:
    """Kernel Tuner 1.3's simulation runner has no `get_device_info`: the strategy crashed the
    user's run with an AttributeError there (issue 31); now it warns and goes on."""

    class Named:
        name = "NVIDIA A100-PCIE-40GB"

    class Current:  # Kernel Tuner 1.4 and later
        def get_device_info(self) -> Named:
            return Named()

    class Older:  # a device, but no get_device_info
        dev = Named()

    warnings: list[str] = []
    assert device_name(Current(), warnings.append) == "NVIDIA A100-PCIE-40GB"
    assert device_name(Older(), warnings.append) == "NVIDIA A100-PCIE-40GB"
    assert warnings == []
    assert device_name(object(), warnings.append) is None
    (warning,) = warnings
    assert "chip=" in warning


def test_a_space_too_large_to_send_still_uses_the_memory(live, w6600_cache, monkeypatch):
    """More valid configurations than the service takes (50,000) used to lose the memory
    silently (413, then the own search): now the space goes without its valid list, one
    warning says why, and the memory's suggestions within the restrictions are evaluated."""
    from tunemem.agent_client.tuners import kernel_tuner as strategy_module

    url, _ = live([SAMPLES_DIR / "kerneltuner" / "convolution" / "A100.json.gz"])
    path, doc = w6600_cache
    monkeypatch.setattr(strategy_module, "VALID_SENT_MAX", 10)  # the W6600 space: over 10
    warnings: list[str] = []
    strategy = MemoryStrategy(url=url, k=4, chip="W6600", warn=warnings.append)
    results, _ = kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": 8}, quiet=True
    )
    keys = doc["tune_params_keys"]
    tried = {tuple(r[k] for k in keys) for r in results}
    assert len(results) == 8 and tried <= set(measured(doc))
    (warning,) = warnings
    assert "more than the memory takes in one request (10)" in warning
    run = strategy.last_run
    assert run is not None and run.sources[0] == "exemplar" and run.reported >= 1
