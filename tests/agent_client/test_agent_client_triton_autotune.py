"""The triton.autotune drop-in under the Triton interpreter, against a live memory over HTTP.

The memory is a real service behind uvicorn (hashing embedder, in-memory index). What it
remembers is a SYNTHETIC trajectory of the same kernel on another size, with invented times in
which BLOCK 64 with 2 warps is fastest. Timings under the interpreter are wall-clock and
meaningless as speed; the tests are about which configurations get timed and what is reported.
"""

from __future__ import annotations

import os
import socket
import warnings

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tunemem.agent_client.tuners.triton.autotune import (  # noqa: E402
    MemoryTuning,
    MemoryUnavailableWarning,
    autotune,
    hook,
    interpreter_bench,
)
from tunemem.bench.common.memory_server import LiveService  # noqa: E402

BLOCKS = (16, 32, 64)
WARPS = (1, 2)
pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="runs Triton's interpreter on the CPU"
)


def configs() -> list[triton.Config]:
    return [triton.Config({"BLOCK": b}, num_warps=w) for b in BLOCKS for w in WARPS]


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


def launch(kernel, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n)
    y = torch.empty(n)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    return x, y


def synthetic_trajectory(n: int) -> dict:
    """SYNTHETIC: the kernel tuned on size n with invented times (BLOCK 64, 2 warps best)."""
    attempts = []
    for index, (b, w) in enumerate((b, w) for b in BLOCKS for w in WARPS):
        latency = 1.0 + abs(b - 64) / 16 + (0.0 if w == 2 else 0.5)
        attempts.append(
            {
                "index": index,
                "params": {"BLOCK": b, "num_warps": w, "num_stages": 3},
                "compiled": True,
                "correct": True,
                "latency_ms": latency,
            }
        )
    return {
        "version": 1,
        "source_format": "native",
        "source": f"synthetic-scale-{n}",
        "task": {
            "op": "scale",
            "kernel": "scale_kernel",
            "signature": {"n": n, "dtype": "float32"},
            "dtype": "float32",
        },
        "context": {"chip": "cpu", "backend": "cpu"},
        "attempts": attempts,
        "evidence": {},
        "synthetic": True,
    }


@pytest.fixture
def memory():
    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    from tunemem.agent_client.client import MemoryClient

    with MemoryClient(live.url) as client:
        client.upload_trajectories([synthetic_trajectory(4096)])
    yield live
    live.close()


def counts(live: LiveService) -> dict:
    from tunemem.agent_client.client import MemoryClient

    with MemoryClient(live.url) as client:
        return client.health()["counts"]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_times_only_the_memory_best_and_reports_every_timing(memory):
    @autotune(
        configs=configs(),
        key=["n"],
        memory_url=memory.url,
        top_k=4,
        explore=0.25,
        op="scale",
        kernel="scale_kernel",
    )
    @triton.jit
    def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)

    tuning: MemoryTuning = kernel._tunemem
    before = counts(memory)
    x, y = launch(kernel, 100)
    assert torch.allclose(y, 3.0 * x)
    assert tuning.flush(30.0)

    decision = tuning.last_decision
    assert decision["how"] == "memory" and decision["given"] == 6
    # Rounds within top_k = 4: the memory's best two first, then one at a time with the key's
    # timings sent back, until a round finds nothing faster (interpreter timings are noise).
    assert decision["rounds"][0] == 2 and sum(decision["rounds"]) == decision["timed"]
    assert 3 <= len(kernel.configs_timings) == decision["timed"] <= 4
    assert decision["origins"][:2] == ["memory:exemplar"] * 2
    timed = [{"BLOCK": c.kwargs["BLOCK"], "num_warps": c.num_warps} for c in kernel.configs_timings]
    # The memory's opening comes from the remembered run's three fastest, not its slowest.
    fastest = [{"BLOCK": 64, "num_warps": 2}, {"BLOCK": 64, "num_warps": 1}]
    fastest.append({"BLOCK": 32, "num_warps": 2})
    assert all(config in fastest for config in timed[:2])
    assert {"BLOCK": 16, "num_warps": 1} not in timed[:2]

    (report,) = tuning.reports
    assert report["sent"] and report["error"] is None
    assert report["key"] == {"n": 100}
    trajectory = report["trajectory"]
    assert trajectory["task"]["signature"] == {"n": 100, "dtype": "float32"}
    assert len(trajectory["attempts"]) == decision["timed"]
    assert trajectory["evidence"]["triton"] == triton.__version__
    assert trajectory["context"]["toolchain"]["triton"] == triton.__version__
    # Timed here, on the device the runtime names (the interpreter's CPU in this test), and
    # 3 or 4 of the 6 configurations given: a partial run (issue 36).
    assert trajectory["provenance"] == {
        "origin": "measured",
        "device_reported": "cpu",
        "coverage": "partial",
    }
    assert {o["outcome"].provenance["origin"] for o in report["outcomes"]} == {"measured"}
    after = counts(memory)
    assert after["trajectories"] == before["trajectories"] + 1
    suggested = [o for o in decision["origins"] if o.startswith("memory:")]
    assert len(report["outcomes"]) == len(suggested)  # one per timed suggestion
    for sent in report["outcomes"]:  # the configuration, and the spread of Triton's runs
        outcome = sent["outcome"]
        assert set(outcome.config) >= {"BLOCK", "num_warps"}
        assert outcome.latency_spread_ms is not None and outcome.latency_spread_ms >= 0
    assert after["outcomes"] == before["outcomes"] + len(suggested)

    # The same key again: Triton's cache answers; nothing is asked or reported again.
    x, y = launch(kernel, 100)
    assert torch.allclose(y, 3.0 * x)
    assert len(tuning.reports) == 1


def test_unreachable_memory_is_triton_with_one_warning():
    @triton.autotune(configs=configs(), key=["n"], do_bench=interpreter_bench)
    @triton.jit
    def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)

    hook(kernel, closed_port_url(), top_k=2, timeout_s=1.0)
    with pytest.warns(MemoryUnavailableWarning, match="unavailable") as caught:
        x, y = launch(kernel, 100)
    assert torch.allclose(y, 3.0 * x)
    assert len(kernel.configs_timings) == 6  # Triton's own behaviour: everything timed
    assert len([w for w in caught if w.category is MemoryUnavailableWarning]) == 1
    assert kernel._tunemem.last_decision["how"].startswith("the memory could not help")

    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryUnavailableWarning)  # no second warning
        x, y = launch(kernel, 77)
    assert torch.allclose(y, 3.0 * x)
    assert len(kernel.configs_timings) == 6
    assert not any(r["sent"] for r in kernel._tunemem.reports)


def test_within_budget_no_question_is_asked():
    class NoCalls:
        def suggest(self, **body):
            raise AssertionError("the memory must not be asked when every config is timed")

        def report(self, *args, **kwargs):
            return None

        def upload_trajectories(self, trajectories):
            return {}

    @autotune(configs=configs()[:2], key=["n"], memory_url="http://unused", top_k=4)
    @triton.jit
    def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)

    kernel._tunemem.client = NoCalls()
    x, y = launch(kernel, 50)
    assert torch.allclose(y, 3.0 * x)
    assert len(kernel.configs_timings) == 2


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="top_k"):
        MemoryTuning("http://x", top_k=0)
    with pytest.raises(ValueError, match="fraction"):
        MemoryTuning("http://x", top_k=1.5)
    with pytest.raises(ValueError, match="explore"):
        MemoryTuning("http://x", explore=2.0)
    with pytest.raises(TypeError, match="triton.autotune"):
        hook(scale_kernel, "http://x")


def test_fraction_budget_and_user_prune_compose(memory):
    seen = []

    def only_big_blocks(configs, named_args, **kwargs):
        seen.append(len(configs))
        return [c for c in configs if c.kwargs["BLOCK"] >= 32]

    @triton.autotune(
        configs=configs(),
        key=["n"],
        prune_configs_by={"early_config_prune": only_big_blocks},
        do_bench=interpreter_bench,
    )
    @triton.jit
    def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)

    hook(kernel, memory.url, top_k=0.5, explore=0.0, op="scale", kernel="scale_kernel")
    x, y = launch(kernel, 200)
    assert torch.allclose(y, 3.0 * x)
    assert seen == [6]
    assert kernel._tunemem.last_decision["given"] == 4  # the user's prune ran first
    assert len(kernel.configs_timings) == 2  # half of the 4, all from the memory
    assert all(c.kwargs["BLOCK"] >= 32 for c in kernel.configs_timings)
    assert all(o.startswith("memory") for o in kernel._tunemem.last_decision["origins"])
    assert kernel._tunemem.flush(30.0)
