"""SGLang's layout: `tunemem tune moe --sglang` writes under `configs/triton_<x_y_z>/` for the
installed Triton, and `tunemem moe search-space` writes the memory's ranked candidates as
SGLang's `--search-space-file` (a JSON list of configurations), checked here as SGLang's tuner
checks it. The memory holds the bundled vLLM files (ingest/samples, real shipped
configurations); the tuning replays the committed H200 landscape."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
import triton
from typer.testing import CliRunner

from tunemem.agent_client.tuners.moe.search_space import search_space
from tunemem.agent_client.tuners.moe.tune import MoeShape
from tunemem.cli.app import app
from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.kernels.moe_space import PARAMS, default_config, sglang_version_dir

REPO = Path(__file__).resolve().parents[2]
LANDSCAPE = REPO / "bench" / "results" / "moe" / "h200-landscape" / "mixtral-8x7b-tp1-fp8.jsonl.gz"
NAME = "E=8,N=14336,device_name=NVIDIA_H200,dtype=fp8_w8a8.json"
SHAPE = ["-E", "8", "-N", "14336", "--hidden", "4096", "--topk", "2", "--dtype", "fp8"]


def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def shipped_memory(make_service):
    """A served memory holding the bundled vLLM files (real shipped configurations)."""
    import uvicorn

    from tunemem.memory_service.http.app import create_app

    service = make_service()
    service.ingest(read_any([SAMPLES_DIR / "vllm_fused_moe"]))
    config = uvicorn.Config(create_app(service), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_version_folder_is_sglangs():
    assert sglang_version_dir("3.9.0") == "triton_3_9_0"
    assert sglang_version_dir("3.1.0") == "triton_3_1_0"
    with pytest.raises(ValueError):
        sglang_version_dir("../x")


def test_tune_moe_sglang_writes_under_the_installed_tritons_folder(tmp_path):
    args = ["tune", "moe", *SHAPE, "--batch-sizes", "1,4096", "--budget", "4"]
    args += ["--device-name", "NVIDIA H200", "--replay", str(LANDSCAPE), "--out", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--url", closed_url(), "--sglang"])
    assert done.exit_code == 0, done.output
    folder = tmp_path / "configs" / ("triton_" + triton.__version__.replace(".", "_"))
    path = folder / NAME
    assert path.exists(), sorted(str(p) for p in tmp_path.rglob("*"))
    assert not (tmp_path / NAME).exists()
    configs = json.loads(path.read_text())
    assert sorted(configs, key=int) == ["1", "4096"]
    assert all(set(c) == set(PARAMS) for c in configs.values())
    # Without --sglang, vLLM's flat layout is unchanged.
    flat = CliRunner().invoke(app, [*args, "--url", closed_url()])
    assert flat.exit_code == 0 and (tmp_path / NAME).exists()


def as_sglang_reads(path: Path) -> list[dict]:
    """SGLang's tuner's own check of a --search-space-file (tuning_fused_moe_triton.py)."""
    space = json.loads(path.read_text())
    if not isinstance(space, list) or not all(isinstance(c, dict) for c in space):
        raise ValueError("--search-space-file must contain a JSON list of configs")
    return space


def test_search_space_ranks_other_gpus_choices_first(shipped_memory, tmp_path):
    out = tmp_path / "space.json"
    args = ["moe", "search-space", *SHAPE, "--device-name", "NVIDIA H200", "--out", str(out)]
    more = ["--batch-sizes", "1,64,4096", "--size", "12", "--url", shipped_memory]
    done = CliRunner().invoke(app, [*args, *more])
    assert done.exit_code == 0, done.output
    assert "from other GPUs' files in the memory" in done.output
    space = as_sglang_reads(out)
    assert 3 < len(space) <= 12
    assert all(list(c) == list(PARAMS) for c in space)
    assert all(isinstance(v, int) for c in space for v in c.values())
    assert len({tuple(c.values()) for c in space}) == len(space)

    found = search_space(
        MoeShape(8, 14336, 4096, 2, "fp8_w8a8"),
        "NVIDIA H200",
        [1, 64, 4096],
        memory_url=shipped_memory,
        size=12,
    )
    assert found.memory_used and found.sglang_file() == space
    # The H100's own fp8 file for this very layer is the nearest: its choices come first,
    # one per batch size (its entries nearest 1, 64 and 4096) before any second choice.
    assert [o.split(":")[1] for o in found.origins[:3]] == ["h100"] * 3
    assert len({o.split("M=")[1] for o in found.origins[:3]}) == 3


def test_search_space_without_a_memory_is_the_documented_fallback(tmp_path):
    out = tmp_path / "space.json"
    args = ["moe", "search-space", *SHAPE, "--device-name", "NVIDIA H200", "--out", str(out)]
    done = CliRunner().invoke(app, [*args, "--batch-sizes", "1,4096", "--url", closed_url()])
    assert done.exit_code == 0, done.output
    assert "unavailable" in done.output and "without a memory" in done.output
    space = as_sglang_reads(out)
    assert len(space) == 64
    assert space[0] == default_config(1, 8, "fp8_w8a8")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--dtype", "int3", "--dtype"),
        ("--size", "0", "--size must be at least 1"),
        ("--batch-sizes", "0,4", "positive integers"),
    ],
)
def test_search_space_refuses_bad_input_and_writes_nothing(tmp_path, option, value, message):
    out = tmp_path / "space.json"
    args = ["moe", "search-space", *SHAPE, "--device-name", "NVIDIA H200", "--out", str(out)]
    done = CliRunner().invoke(app, [*args, option, value, "--url", closed_url()])
    assert done.exit_code == 2 and message in done.output and not out.exists()
