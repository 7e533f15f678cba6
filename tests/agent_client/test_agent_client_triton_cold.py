"""The drop-in from a cold memory, under the Triton interpreter, on a SYNTHETIC landscape.

The kernel really runs (interpreter); its timings are invented by a `do_bench` that reads the
configuration and the key Triton just launched with (through the autotuner's `pre_hook`): the
best BLOCK is n / 8, so the best configuration moves with the key. The memory is a real service
over HTTP that starts empty: the first key finds nothing and times everything, as Triton would;
its timings go back; at the next key the drop-in must find the moved best within its budget.
"""

from __future__ import annotations

import math
import os
import warnings

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tunemem.agent_client.tuners.triton.autotune import MemoryUnavailableWarning, hook  # noqa: E402
from tunemem.bench.common.memory_server import LiveService  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="runs Triton's interpreter on the CPU"
)
BLOCKS = (16, 32, 64, 128, 256, 512)
WARPS = (1, 2, 4)


def synthetic_ms(n: int, block: int, warps: int) -> float:
    """SYNTHETIC: fastest at BLOCK = n / 8 with 2 warps."""
    return 1.0 + 0.3 * abs(math.log2(block / (n / 8))) + 0.2 * abs(math.log2(warps / 2))


class SyntheticTimer:
    """`do_bench` with invented times of the configuration launched last (via `pre_hook`)."""

    def __init__(self) -> None:
        self.launched: dict = {}
        self.timed: list[tuple[int, int, int]] = []

    def pre_hook(self, nargs: dict, reset_only: bool = False) -> None:
        if not reset_only:
            self.launched = {k: nargs[k] for k in ("n", "BLOCK", "num_warps")}

    def __call__(self, kernel_call, quantiles=None) -> list[float]:
        kernel_call()
        n, block, warps = (self.launched[k] for k in ("n", "BLOCK", "num_warps"))
        self.timed.append((n, block, warps))
        ms = synthetic_ms(n, block, warps)
        return [ms, ms, ms]


def make_kernel(timer: SyntheticTimer):
    @triton.autotune(
        configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in BLOCKS for w in WARPS],
        key=["n"],
        pre_hook=timer.pre_hook,
        do_bench=timer,
    )
    @triton.jit
    def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)

    return double_kernel


def launch(kernel, n: int) -> None:
    x = torch.randn(n)
    y = torch.empty(n)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.allclose(y, 2.0 * x)


@pytest.fixture
def memory():
    live = LiveService(
        # model_wait_s: a suggest waits for the model trained on the last report (the drop-in
        # waits as long), so what the test sees does not depend on how fast it trains.
        {"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0, "model_wait_s": 60}
    )
    yield live
    live.close()


def test_cold_memory_first_key_everything_then_the_moved_best_within_budget(memory):
    timer = SyntheticTimer()
    kernel = make_kernel(timer)
    hook(kernel, memory.url, top_k=6, op="double", kernel="double_kernel", timeout_s=60.0)
    tuning = kernel._tunemem

    with pytest.warns(MemoryUnavailableWarning, match="nothing"):
        launch(kernel, 512)  # the memory is empty: Triton's own behaviour
    assert len(kernel.configs_timings) == len(BLOCKS) * len(WARPS)
    assert tuning.flush(30.0) and tuning.reports[-1]["sent"]

    timer.timed.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryUnavailableWarning)
        launch(kernel, 2048)  # the best moved from BLOCK 64 to BLOCK 256
    decision = tuning.last_decision
    assert decision["how"] == "memory" and decision["timed"] <= 6
    assert len(timer.timed) == decision["timed"]  # each configuration benchmarked once
    assert len(decision["rounds"]) >= 2  # the memory's best, then what the timings suggest
    best = kernel.best_config
    assert (best.kwargs["BLOCK"], best.num_warps) == (256, 2)
    assert len(kernel.configs_timings) == decision["timed"]  # Triton's own record of them
    assert tuning.flush(30.0)
    report = tuning.reports[-1]
    assert report["sent"] and len(report["trajectory"]["attempts"]) == decision["timed"]
    # Each suggested timing is an outcome against the retrieval its round came from.
    assert {o["retrieval_id"] for o in report["outcomes"]} >= {decision["retrieval_id"]}


def test_the_opening_alone_misses_the_moved_best(memory):
    """The one-shot choice (the opening round, no timings sent back) does not reach it: what
    the rounds add."""
    timer = SyntheticTimer()
    kernel = make_kernel(timer)
    hook(kernel, memory.url, top_k=6, op="double", kernel="double_kernel", timeout_s=60.0)
    tuning = kernel._tunemem
    with pytest.warns(MemoryUnavailableWarning):
        launch(kernel, 512)
    assert tuning.flush(30.0)
    configs = list(kernel.configs)
    first = tuning.choose(configs, {"n": 2048}, ["n"])  # no bench: the opening round only
    assert (256, 2) not in {(c.kwargs["BLOCK"], c.num_warps) for c in first}
