"""Both tuner integrations against a hostile memory (issue 30, cases 5 and 6): a memory that
hangs, trickles, errs, answers malformed or huge bodies, or suggests configurations outside the
space, excluded by its restrictions, tried already or of the wrong types. The user's tuning
always finishes with the tool's own behaviour, within the deadline, after one warning.

The memory is `hostile_memory.HostileMemory` (SYNTHETIC answers, no service); Kernel Tuner runs
in simulation mode over the bundled W6600 convolution cache (real measurements,
ingest/samples/LICENSES.md); Triton runs its interpreter on the CPU.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_client.hostile_memory import HostileMemory
from tunemem.ingest.samples import TARGETS_DIR


@pytest.fixture
def hostile() -> Iterator[HostileMemory]:
    memory = HostileMemory()
    yield memory
    memory.close()


# -- the Kernel Tuner strategy ---------------------------------------------------------------

kernel_tuner = pytest.importorskip("kernel_tuner", reason="needs kernel_tuner (make install)")

FAILING = ["hang", "trickle", "error", "huge"]
MALFORMED = ["text", "suggestions-text", "suggestions-scalars", "config-text"]
WRONG = ["outside", "restricted", "repeat", "wrong_types"]


@pytest.fixture(scope="module")
def w6600(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("w6600") / "W6600.json"
    with gzip.open(TARGETS_DIR / "convolution" / "W6600.json.gz", "rt") as packed:
        path.write_text(packed.read())
    return path, json.loads(path.read_text())


def _tune(url: str, cache: tuple[Path, dict], fevals: int = 10):
    from tunemem.agent_client.tuners.kernel_tuner import MemoryStrategy

    path, doc = cache
    said: list[str] = []
    strategy = MemoryStrategy(url=url, k=4, chip="W6600", timeout_s=1.0, warn=said.append)
    started = time.monotonic()
    results, _ = kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": fevals}, quiet=True
    )
    took = time.monotonic() - started
    keys = doc["tune_params_keys"]
    measured = {
        tuple(e[k] for k in keys) for e in doc["cache"].values() if isinstance(e["time"], float)
    }
    tried = [tuple(r[k] for k in keys) for r in results]
    assert len(tried) == fevals and len(set(tried)) == fevals
    assert set(tried) <= measured  # the user's own space and restrictions
    return said, took, strategy


@pytest.mark.parametrize("mode", FAILING + ["malformed"] + WRONG)
def test_kernel_tuner_finishes_its_own_way_after_one_warning(hostile, w6600, mode):
    hostile.mode = mode
    hostile.malformed = "suggestions-scalars"
    said, took, _ = _tune(hostile.url, w6600)
    assert len(said) == 1, said
    assert took < 15, f"{mode}: {took:.1f} s"
    # At most the rounds the bound allows: no retry, no loop on a wrong memory.
    assert hostile.requests.get("/v1/suggest", 0) <= 3
    if mode in FAILING:
        assert hostile.requests.get("/v1/suggest") == 1


class GuardClock:
    """The guard's clock alone (`memory_policy.time`), so a Retry-After passes in readings, not
    in seconds: frozen, or `step` seconds later at each reading."""

    def __init__(self, step: float = 0.0) -> None:
        self.now, self.step = 1000.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


def test_kernel_tuner_leaves_a_busy_memory_alone_for_its_retry_after(hostile, w6600, monkeypatch):
    """Issue 39, case 5, on the tuners' one policy: 429 is "busy, retry later", not "away". The
    strategy used to ask again every round, whatever the Retry-After, and after five busy rounds
    warned and stopped asking for the rest of the run; now it tunes on its own while the
    Retry-After runs (here it never ends), warns nothing and still sends the run."""
    from tunemem.agent_client.tuners import memory_policy

    monkeypatch.setattr(memory_policy, "time", GuardClock())
    hostile.mode = "busy"
    said, _, strategy = _tune(hostile.url, w6600, fevals=40)  # 10 rounds of 4
    assert said == []
    assert hostile.requests["/v1/suggest"] == 1
    run = strategy.last_run
    assert run is not None and set(run.sources) == {"search"}
    assert len(run.notes) == 1 and "busy" in run.notes[0]
    assert hostile.requests.get("/v1/trajectories") == 1  # busy is not away: the run goes in


def test_kernel_tuner_asks_a_busy_memory_again_after_its_retry_after(hostile, w6600, monkeypatch):
    from tunemem.agent_client.tuners import memory_policy

    monkeypatch.setattr(memory_policy, "time", GuardClock(step=1.0))
    hostile.busy_first, hostile.retry_after = 1, "3"
    said, _, strategy = _tune(hostile.url, w6600, fevals=24)  # 6 rounds of 4
    assert said == []
    run = strategy.last_run
    assert run is not None and run.sources[:4] == ["search"] * 4  # the busy round: its own
    assert "exemplar" in run.sources  # asked again once the Retry-After passed, and heard
    assert 2 <= hostile.requests["/v1/suggest"] < 6  # not in the rounds the Retry-After held


@pytest.mark.parametrize("malformed", MALFORMED)
def test_kernel_tuner_survives_every_malformed_answer(hostile, w6600, malformed):
    hostile.mode, hostile.malformed = "malformed", malformed
    said, _, _ = _tune(hostile.url, w6600, fevals=6)
    assert len(said) == 1, said


def test_kernel_tuner_reports_in_the_background_of_a_hung_memory(hostile, w6600):
    hostile.report_mode = "hang"
    said, took, strategy = _tune(hostile.url, w6600, fevals=12)
    assert len(said) == 1 and "report" in said[0]
    assert took < 8, f"{took:.1f} s"  # not one 1 s deadline per evaluation
    assert hostile.requests.get("/v1/outcomes") == 1
    assert "/v1/trajectories" not in hostile.requests  # a failed memory is not asked again


def test_kernel_tuner_with_junk_lessons_tunes_from_the_memory(hostile, w6600):
    hostile.mode, hostile.malformed = "malformed", "lessons-junk"
    said, _, strategy = _tune(hostile.url, w6600, fevals=8)
    assert said == []
    assert strategy.last_run is not None and strategy.last_run.sources[0] == "exemplar"


# -- the Triton drop-in ------------------------------------------------------------------------


def _triton_kernel(url: str):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl

    from tunemem.agent_client.tuners.triton.autotune import hook, interpreter_bench

    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32, 64) for w in (1, 2)]

    @triton.autotune(configs=configs, key=["n"], do_bench=interpreter_bench)
    @triton.jit
    def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)

    return hook(kernel, url, top_k=2, timeout_s=1.0)


def _launch(kernel, n: int = 100):
    import torch
    import triton

    x, y = torch.randn(n), torch.empty(n)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.allclose(y, 3.0 * x)


triton_only = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="runs Triton's interpreter on the CPU"
)


@triton_only
@pytest.mark.parametrize(
    "mode,malformed",
    [(m, "text") for m in FAILING]
    + [("malformed", m) for m in MALFORMED]
    + [("outside", "text"), ("wrong_types", "text")],
)
def test_triton_times_every_configuration_after_one_warning(hostile, mode, malformed):
    from tunemem.agent_client.tuners.triton.autotune import MemoryUnavailableWarning

    hostile.mode, hostile.malformed = mode, malformed
    kernel = _triton_kernel(hostile.url)
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _launch(kernel)
    took = time.monotonic() - started
    ours = [w for w in caught if w.category is MemoryUnavailableWarning]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert len(kernel.configs_timings) == 6  # Triton's own behaviour: everything timed
    assert hostile.requests.get("/v1/suggest") == 1
    assert took < 20, f"{mode}: {took:.1f} s"
    kernel._tunemem.flush(3.0)


@triton_only
def test_triton_reports_in_the_background_of_a_hung_memory(hostile):
    from tunemem.agent_client.tuners.triton.autotune import MemoryUnavailableWarning

    hostile.report_mode = "hang"
    kernel = _triton_kernel(hostile.url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _launch(kernel)
        assert len(kernel.configs_timings) == 2  # the memory's two picks
        started = time.monotonic()
        assert kernel._tunemem.flush(3.0)
        assert time.monotonic() - started < 2.5
    ours = [w for w in caught if w.category is MemoryUnavailableWarning]
    assert len(ours) == 1 and "report" in str(ours[0].message)
    (report,) = kernel._tunemem.reports
    assert not report["sent"] and report["error"]
