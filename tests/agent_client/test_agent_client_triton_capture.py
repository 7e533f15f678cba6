"""Triton's own autotuner captured through `triton.knobs.autotuning.listener`.

Triton's own `Autotuner` runs here on the CPU, not interpreted: the kernel is a real
`JITFunction` (never launched), wrapped in a launcher that records which configuration each
benchmark call asked for, and `do_bench` answers with SYNTHETIC recorded timings (invented,
BLOCK 256 with 4 warps fastest). So Triton's own code decides, calls the listener and fills
`configs_timings`, exactly as on a GPU; only the timing is replayed.
"""

from __future__ import annotations

import socket
import time
import warnings

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction, KernelInterface

from tunemem.agent_client.tuners.triton import capture as triton_capture
from tunemem.agent_client.tuners.triton.capture import (
    CaptureUnavailableWarning,
    TritonCapture,
    listener_support,
)

BLOCKS = (128, 256, 512)
WARPS = (2, 4)


def synthetic_ms(n: int, block: int, warps: int) -> float:
    """SYNTHETIC timings: BLOCK 256 with 4 warps fastest, growing with n."""
    return n / 1e5 + abs(block - 256) / 256 + (0.0 if warps == 4 else 0.3)


def negate(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, -tl.load(x_ptr + offsets, mask=mask), mask=mask)


class RecordedLaunch(KernelInterface):
    """The kernel as Triton's Autotuner wraps it; a launch only records its meta-parameters."""

    def __init__(self) -> None:
        self.fn = JITFunction(negate)
        self.arg_names = self.fn.arg_names
        self.last: dict = {}

    def run(self, *args, **kwargs):
        self.last = {**dict(zip(self.arg_names, args, strict=False)), **kwargs}


def autotuned(launch: RecordedLaunch, cache: dict | None = None) -> Autotuner:
    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        ms = synthetic_ms(launch.last["n"], launch.last["BLOCK"], launch.last["num_warps"])
        if cache is not None:
            cache.setdefault("calls", []).append(launch.last["BLOCK"])
        return [ms, ms * 0.95, ms * 1.05]

    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in BLOCKS for w in WARPS]
    return Autotuner(launch, launch.arg_names, configs, ["n"], None, None, do_bench=do_bench)


class Uploads:
    """A client that keeps what would go to the memory (tests only)."""

    def __init__(self, fail: bool = False, delay_s: float = 0.0) -> None:
        self.runs: list[dict] = []
        self.fail, self.delay_s, self.calls = fail, delay_s, 0

    def upload_trajectories(self, runs):
        self.calls += 1
        time.sleep(self.delay_s)
        if self.fail:
            raise ConnectionError("memory down")
        self.runs.extend(runs)
        return {"stored": len(runs)}


@pytest.fixture(autouse=True)
def compiled_mode(monkeypatch):
    """These tests are about Triton's compiled path: not under the interpreter."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    from triton import knobs

    before = knobs.autotuning.listener
    yield
    knobs.autotuning.listener = before


def test_the_installed_triton_calls_a_listener():
    supported, why = listener_support()
    assert supported, why


def test_every_autotune_goes_to_the_memory_with_its_key_timings_and_device():
    uploads = Uploads()
    capture = TritonCapture(
        "http://memory", client=uploads, context={"chip": "h200", "chip_raw": "NVIDIA H200"}
    ).install()
    try:
        launch = RecordedLaunch()
        kernel = autotuned(launch)
        x = torch.zeros(1000)
        kernel.run(x, torch.empty_like(x), 1000)
        kernel.run(x, torch.empty_like(x), 1000)  # Triton's own cache: no new autotune
        kernel.run(x, torch.empty_like(x), 5000)
        assert capture.flush(10.0)
    finally:
        capture.uninstall()
    assert capture.captured == 2 and len(uploads.runs) == 2
    first = uploads.runs[0]
    assert first["task"] == {
        "op": "negate",
        "kernel": "negate",
        "signature": {"n": 1000, "dtype": "float32"},
        "dtype": "float32",
    }
    assert first["context"]["chip"] == "h200" and first["context"]["chip_raw"] == "NVIDIA H200"
    assert first["context"]["toolchain"]["triton"] == triton.__version__
    assert first["evidence"]["triton"] == triton.__version__
    assert first["evidence"]["key"] == [1000, "torch.float32", "torch.float32"]
    assert first["evidence"]["interpreter"] is False
    assert first["evidence"]["best_config"] == {"BLOCK": 256, "num_warps": 4, "num_stages": 3}
    timed = {(a["params"]["BLOCK"], a["params"]["num_warps"]): a for a in first["attempts"]}
    assert len(timed) == 6
    for (block, warps), attempt in timed.items():
        ms = synthetic_ms(1000, block, warps)
        assert attempt["latency_ms"] == pytest.approx(ms)
        assert attempt["metrics"]["p20_ms"] == pytest.approx(ms * 0.95)
    assert uploads.runs[1]["task"]["signature"]["n"] == 5000


def test_a_cache_hit_is_not_a_measurement_and_is_not_uploaded():
    uploads = Uploads()
    capture = TritonCapture("http://memory", client=uploads)
    config = triton.Config({"BLOCK": 128}, num_warps=4)
    assert not capture.capture(
        None,
        fn=JITFunction(negate),
        key=(1000, "torch.float32"),
        best_config=config,
        configs_timings={config: [0.1, 0.1, 0.1]},
        duration=None,
        cache_hit=True,
    )
    assert capture.flush(5.0)
    assert capture.skipped_cache_hits == 1 and uploads.calls == 0


def test_a_listener_already_set_is_still_called_and_restored():
    from triton import knobs

    heard = []
    knobs.autotuning.listener = lambda **kw: heard.append(kw["key"])
    capture = TritonCapture("http://memory", client=Uploads()).install()
    launch = RecordedLaunch()
    x = torch.zeros(10)
    autotuned(launch).run(x, torch.empty_like(x), 10)
    capture.uninstall()
    assert heard == [(10, "torch.float32", "torch.float32")] and capture.captured == 1
    assert knobs.autotuning.listener is not capture and knobs.autotuning.listener is not None


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_memory_away_warns_once_and_never_slows_or_breaks_the_program():
    capture = TritonCapture(closed_port_url(), timeout_s=1.0).install()
    launch = RecordedLaunch()
    kernel = autotuned(launch)
    x = torch.zeros(10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.perf_counter()
        for n in (10, 20):
            kernel.run(x, torch.empty_like(x), n)
        assert time.perf_counter() - started < 1.0  # the upload waits in the background
        capture.flush(5.0)
        for n in (30, 40, 50):
            kernel.run(x, torch.empty_like(x), n)
        capture.flush(5.0)
    capture.uninstall()
    assert kernel.cache[(50, "torch.float32", "torch.float32")].kwargs == {"BLOCK": 256}
    mine = [w for w in caught if issubclass(w.category, CaptureUnavailableWarning)]
    assert len(mine) == 1 and "program runs as usual" in str(mine[0].message)
    assert capture.sent == 0 and capture.dropped >= 3


def test_a_full_queue_drops_instead_of_waiting():
    slow = Uploads(delay_s=0.5)
    capture = TritonCapture("http://memory", client=slow, max_pending=1).install()
    launch = RecordedLaunch()
    kernel = autotuned(launch)
    x = torch.zeros(10)
    started = time.perf_counter()
    for n in range(1, 6):
        kernel.run(x, torch.empty_like(x), n)
    assert time.perf_counter() - started < 0.5
    capture.uninstall()
    assert capture.dropped >= 3


def test_what_the_capture_cannot_read_never_reaches_the_program():
    capture = TritonCapture("http://memory", client=Uploads())
    capture(fn=None, key=object(), best_config=None, configs_timings="not a dict")
    assert capture.errors == 1


def test_a_triton_without_the_listener_is_said_plainly(monkeypatch):
    from triton import knobs

    class OlderAutotuning:  # knobs.autotuning as Tritons before the listener had it
        cache = False
        print = False

    monkeypatch.setattr(knobs, "autotuning", OlderAutotuning())
    with pytest.warns(CaptureUnavailableWarning, match="has no triton.knobs.autotuning.listener"):
        capture = TritonCapture("http://memory", client=Uploads()).install()
    assert not capture.active and "cannot be captured" in capture.reason
    assert triton_capture._INSTALLED.count(capture) == 0


def test_captured_autotunes_serve_the_next_key_on_the_next_gpu_through_prune_configs_by():
    """Two keys captured on one GPU (an H200, SYNTHETIC timings); a third key on another GPU
    (an H100) times only the memory's best two, and they hold the captured best."""
    from tunemem.bench.common.memory_server import LiveService
    from tunemem.capture import prune_configs_by

    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    try:
        h200 = {"chip": "h200", "chip_raw": "NVIDIA H200", "backend": "cuda"}
        capture = TritonCapture(live.url, context=h200).install()
        x = torch.zeros(10)
        captured = autotuned(RecordedLaunch())
        for n in (1000, 8000):
            captured.run(x, torch.empty_like(x), n)
        assert capture.flush(30.0) and capture.sent == 2
        capture.uninstall()

        h100 = {"chip": "h100", "backend": "cuda"}
        pruning = prune_configs_by(live.url, top_k=2, context=h100)
        timed: dict = {}
        launch = RecordedLaunch()
        kernel = autotuned(launch, timed)
        kernel.early_config_prune = pruning["early_config_prune"]
        kernel.run(x, torch.empty_like(x), 3000)
        decision = pruning["early_config_prune"].last_decision("negate")
        assert decision["how"] == "memory" and decision["timed"] == 2
        assert len(timed["calls"]) == 2  # Triton timed only what the memory kept
        assert kernel.cache[(3000, "torch.float32", "torch.float32")].kwargs == {"BLOCK": 256}
    finally:
        live.close()


def test_prune_configs_by_without_a_memory_keeps_every_configuration():
    from tunemem.capture import prune_configs_by

    pruning = prune_configs_by(closed_port_url(), top_k=2, timeout_s=1.0)
    timed: dict = {}
    kernel = autotuned(RecordedLaunch(), timed)
    kernel.early_config_prune = pruning["early_config_prune"]
    x = torch.zeros(10)
    with pytest.warns(UserWarning, match="unavailable"):
        kernel.run(x, torch.empty_like(x), 10)
    assert len(timed["calls"]) == 6
    with pytest.raises(ValueError, match="top_k"):
        prune_configs_by("http://memory", top_k=0)


def test_a_kernel_hooked_to_the_memory_is_not_captured_twice():
    uploads = Uploads()
    capture = TritonCapture("http://memory", client=uploads).install()
    kernel = autotuned(RecordedLaunch())
    kernel._tunemem = object()  # what the drop-in's hook() leaves on the kernel
    x = torch.zeros(10)
    kernel.run(x, torch.empty_like(x), 10)
    capture.uninstall()
    assert capture.captured == 0 and capture.skipped_drop_in == 1


def test_capturing_twice_to_one_memory_sends_each_autotune_once():
    from tunemem.capture import triton as capture_triton

    uploads = Uploads()
    first = capture_triton("http://memory", client=uploads)
    second = capture_triton("http://memory", client=uploads)
    try:
        x = torch.zeros(10)
        autotuned(RecordedLaunch()).run(x, torch.empty_like(x), 10)
        assert first.flush(5.0)
    finally:
        first.uninstall()
    assert second is first and uploads.calls == 1


def test_captured_autotunes_serve_the_drop_in_on_the_next_gpu():
    """The same, through the drop-in (`hook`): it searches in rounds from what was captured."""
    from tunemem.bench.common.memory_server import LiveService
    from tunemem.tuners import hook

    live = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    try:
        h200 = {"chip": "h200", "chip_raw": "NVIDIA H200", "backend": "cuda"}
        capture = TritonCapture(live.url, context=h200).install()
        x = torch.zeros(10)
        captured = autotuned(RecordedLaunch())
        for n in (1000, 8000):
            captured.run(x, torch.empty_like(x), n)
        assert capture.flush(30.0) and capture.sent == 2
        capture.uninstall()

        timed: dict = {}
        kernel = hook(
            autotuned(RecordedLaunch(), timed),
            live.url,
            top_k=3,
            op="negate",
            kernel="negate",
            context={"chip": "h100", "backend": "cuda"},
        )
        kernel.run(x, torch.empty_like(x), 3000)
        decision = kernel._tunemem.last_decision
        assert decision["how"] == "memory" and decision["timed"] <= 3
        assert len(timed["calls"]) <= 3  # Triton timed only what the rounds chose
        assert kernel.cache[(3000, "torch.float32", "torch.float32")].kwargs == {"BLOCK": 256}
        assert kernel._tunemem.flush(30.0)
    finally:
        live.close()
