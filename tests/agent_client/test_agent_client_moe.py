"""`tune_moe` and `tunemem tune moe` on the CPU: the rounds against a live memory holding the
bundled vLLM files (ingest/samples, real shipped configurations), timed from the committed H200
landscape (real measurements, bench/results/moe/h200-landscape); the fallback without a memory;
the output file read back by the project's own vLLM reader; bad input refused."""

from __future__ import annotations

import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.tuners.moe.memory import MemoryUnavailableWarning
from tunemem.agent_client.tuners.moe.tune import MoeShape, MoeTuning, tune_moe
from tunemem.ingest.readers import read_any
from tunemem.ingest.readers.vllm_moe import read as read_vllm
from tunemem.ingest.records import TrajectoryRecord
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.kernels.moe_recorded import recorded_benchmark

REPO = Path(__file__).resolve().parents[2]
LANDSCAPE = REPO / "bench" / "results" / "moe" / "h200-landscape" / "mixtral-8x7b-tp1-fp8.jsonl.gz"
SHAPE = MoeShape(8, 14336, 4096, 2, "fp8_w8a8")
SIZES = [1, 64, 4096]


def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens once the probe is closed


@pytest.fixture(scope="module")
def landscape():
    return recorded_benchmark(LANDSCAPE)


@pytest.fixture
def live(make_service) -> Iterator[Callable[..., tuple[str, object]]]:
    import uvicorn

    from tunemem.memory_service.http.app import create_app

    servers = []

    def start(ingest: list[Path] | None = None) -> tuple[str, object]:
        service = make_service()
        if ingest:
            service.ingest(read_any(ingest))
        config = uvicorn.Config(create_app(service), host="127.0.0.1", port=0, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started
        servers.append((server, thread))
        port = server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}", service

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def check_file(result: MoeTuning, path: Path) -> None:
    """The file is vLLM's: its name, and every batch size read back by our own reader."""
    assert path.name == "E=8,N=14336,device_name=NVIDIA_H200,dtype=fp8_w8a8.json"
    records = list(read_vllm(path))
    assert len(records) == 1 and isinstance(records[0], TrajectoryRecord)
    record = records[0]
    assert record.task.signature["E"] == 8 and record.task.signature["N"] == 14336
    assert record.task.dtype == "fp8_w8a8" and record.context.chip == "h200"
    read_back = {
        a.params["M"]: {k: v for k, v in a.params.items() if k != "M"} for a in record.attempts
    }
    assert sorted(read_back) == SIZES
    for m in SIZES:
        assert read_back[m] == result.best(m)["config"]


def test_rounds_with_the_memory(live, landscape, tmp_path: Path) -> None:
    url, service = live([SAMPLES_DIR / "vllm_fused_moe"])
    benchmark, space, _ = landscape
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryUnavailableWarning)
        result = tune_moe(
            SHAPE,
            SIZES,
            benchmark,
            memory_url=url,
            device_name="NVIDIA H200",
            budget=14,
            space=space,
            out=tmp_path,
        )
    assert result.memory_used and not result.warnings
    for m in SIZES:
        rows = result.timed[m]
        assert 8 < len(rows) <= 14
        first = [r["origin"] for r in rows if r["round"] == 1]
        assert any(o.startswith("shipped:h100") for o in first)  # the H100's fp8 file
        assert "vllm-default" in first
        later = [r["origin"] for r in rows if r["round"] > 1]
        assert any(o.startswith("neighbour:") for o in later) and "local" in later
        assert result.best(m)["us"] == min(r["us"] for r in rows if r["us"] is not None)
    check_file(result, result.path)
    # every round went back: the memory now holds H200 measurements of this layer
    with MemoryClient(url) as client:
        assert client.list_lessons(op="fused_moe", chip="h200")["count"] > 0


def test_without_a_memory_one_warning_then_the_documented_sample(landscape, tmp_path) -> None:
    benchmark, space, _ = landscape
    with pytest.warns(MemoryUnavailableWarning) as caught:
        result = tune_moe(
            SHAPE,
            SIZES,
            benchmark,
            memory_url=closed_url(),
            device_name="NVIDIA H200",
            budget=12,
            space=space,
            out=tmp_path,
        )
    assert len([w for w in caught if w.category is MemoryUnavailableWarning]) == 1
    assert not result.memory_used and result.warnings
    for m in SIZES:
        first = [r["origin"] for r in result.timed[m] if r["round"] == 1]
        assert first[0] == "vllm-default" and set(first[1:]) == {"sample"}
        assert len(result.timed[m]) == 12
    check_file(result, result.path)
    again = tune_moe(SHAPE, SIZES, benchmark, device_name="NVIDIA H200", budget=12, space=space)
    assert again.vllm_configs() == result.vllm_configs()  # seeded: the same run twice


def test_failing_configurations_are_outcomes_never_chosen(tmp_path: Path) -> None:
    def benchmark(config, num_tokens, *_args):  # SYNTHETIC timings: big tiles fail
        if config["BLOCK_SIZE_M"] >= 128:
            raise RuntimeError("out of resources")
        return 100.0 + config["BLOCK_SIZE_N"] / num_tokens + config["num_stages"]

    result = tune_moe(
        MoeShape(8, 64, 128, 2), [1, 2], benchmark, device_name="Test GPU", budget=10, out=tmp_path
    )
    for m in (1, 2):
        assert all(r["error"] for r in result.timed[m] if r["us"] is None)
        assert result.best(m)["config"]["BLOCK_SIZE_M"] < 128
    assert (tmp_path / "E=8,N=64,device_name=Test_GPU.json").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shape": (8, 64, 128, 9)}, "top_k"),
        ({"shape": (8, 64, 128, 2, "int4")}, "dtype"),
        ({"shape": (0, 64, 128, 2)}, "experts"),
        ({"budget": 0}, "budget"),
        ({"batch_sizes": [0, 4]}, "batch sizes"),
    ],
)
def test_bad_input_is_refused(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        shape = MoeShape(*kwargs.pop("shape", (8, 64, 128, 2)))
        tune_moe(shape, kwargs.pop("batch_sizes", [1]), lambda *a: 1.0, device_name="x", **kwargs)


def test_cli_writes_the_file_from_a_replay(tmp_path: Path) -> None:
    from tunemem.cli.app import app

    runner = CliRunner()
    args = [
        "tune",
        "moe",
        "-E",
        "8",
        "-N",
        "14336",
        "--hidden",
        "4096",
        "--topk",
        "2",
        "--dtype",
        "fp8",
        "--batch-sizes",
        "1,4096",
        "--budget",
        "6",
        "--device-name",
        "NVIDIA H200",
        "--replay",
        str(LANDSCAPE),
        "--out",
        str(tmp_path),
        "--url",
        closed_url(),
    ]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    path = tmp_path / "E=8,N=14336,device_name=NVIDIA_H200,dtype=fp8_w8a8.json"
    assert "wrote" in done.output and path.exists()
    assert sorted(a.params["M"] for a in next(iter(read_vllm(path))).attempts) == [1, 4096]

    def changed(option: str, value: str) -> list[str]:
        i = args.index(option)
        return [*args[: i + 1], value, *args[i + 2 :]]

    bad = runner.invoke(app, changed("--dtype", "int3"))
    assert bad.exit_code == 2 and "--dtype" in bad.output
    missing = runner.invoke(app, changed("--batch-sizes", "1,3"))
    assert missing.exit_code == 2 and "no timings for batch sizes [3]" in missing.output
