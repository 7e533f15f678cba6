"""The GPU benchmarks' results go through `write_result`, so each says its code version, the
exact command, the machine with its GPU, what the memory held, measured, and its seeds.

Run on the CPU with fakes: torch is told a GPU named "NVIDIA H200" is there, and no kernel is
timed (no task for live and autotune; kernels' one shape fails on purpose), so what is checked
is what the result records, not a figure."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from tunemem.bench.common.results import merged_provenance, provenance, write_result

GPU = "NVIDIA H200"
VERSION = re.compile(r"[0-9a-f]{40}(\+uncommitted)?|tunemem .+")


@pytest.fixture
def fake_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: GPU)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda *a: SimpleNamespace(multi_processor_count=132)
    )
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)


def recorded(out: Path, name: str, command: str, held: str, seeds: list[int]) -> dict:
    """The result `name` in `out`, checked for what every result must say."""
    result = json.loads((out / f"{name}.json").read_text())
    assert VERSION.fullmatch(result["code_version"])
    assert result["command"] == command
    assert result["machine"]["cpu"] and result["machine"]["cores"]
    assert result["memory_held"]["kind"] == held
    assert result["measurement"] == "measured"
    assert result["seeds"] == seeds
    text = (out / f"{name}.md").read_text()
    assert f"Memory held: **{held}**" in text
    assert f"Code: `{result['code_version']}`; measured" in text
    assert f"Reproduce: `{command}`" in text
    return result


def test_a_live_result_carries_its_provenance(tmp_path, fake_gpu) -> None:
    from tunemem.bench.live.run import main

    argv = ["--tasks", "", "--seed", "3", "--sweeps", str(tmp_path), "--out", str(tmp_path)]
    assert main(argv) == 0
    command = "tunemem bench live " + shlex.join(argv)
    result = recorded(tmp_path, "live", command, "complete", [3])
    assert result["machine"]["gpu"] == GPU and result["machine"]["sms"] == 132


def test_merged_live_results_carry_every_part_and_the_merge(tmp_path, fake_gpu) -> None:
    from tunemem.bench.live.run import main

    for seed in ("1", "2"):
        argv = ["--tasks", "", "--seed", seed, "--sweeps", str(tmp_path)]
        assert main([*argv, "--out", str(tmp_path / seed)]) == 0
    merge = ["--merge", str(tmp_path / "1" / "live.json"), str(tmp_path / "2" / "live.json")]
    assert main([*merge, "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "live.json").read_text())
    parts = result["command"].split(" ; ")
    assert len(parts) == 3 and parts[-1] == "tunemem bench live " + shlex.join(
        [*merge, "--out", str(tmp_path)]
    )
    assert result["seeds"] == [1, 2]


def test_a_kernels_result_carries_its_provenance(tmp_path, fake_gpu, monkeypatch) -> None:
    from tunemem.bench.kernels import run

    monkeypatch.setattr(
        run, "measure_copy_bandwidth", lambda *a: {"gbps": 4000.0, "bytes_copied": 2 << 30}
    )

    def no_kernel(*args, **kwargs):
        raise RuntimeError("no kernel runs in this test")

    monkeypatch.setattr(run, "bench_shape", no_kernel)
    argv = ["--tasks", "softmax", "--quick", "--out", str(tmp_path)]
    assert run.main(argv) == 0
    command = "tunemem bench kernels " + shlex.join(argv)
    result = recorded(tmp_path, "kernels", command, "none", [0])
    assert result["machine"]["gpu"] == GPU and result["machine"]["sms"] == 132
    assert result["rows"][0]["error"].startswith("RuntimeError")


@pytest.mark.parametrize(
    ("extra", "name", "held", "seeds"),
    [
        (["--seed", "4"], "autotune", "complete", [4]),
        (["--full-only", "--name", "full"], "full", "complete", [0]),
        (["--cold", "--orders", "0,2", "--name", "cold"], "cold", "cold", [0, 2]),
    ],
)
def test_an_autotune_result_carries_its_provenance(tmp_path, extra, name, held, seeds) -> None:
    from tunemem.bench.autotune.command import main

    argv = ["--device", "cpu", "--tasks", "", "--sweeps", str(tmp_path), *extra]
    argv += ["--out", str(tmp_path), "--trajectories", str(tmp_path)]
    assert main(argv) == 0
    command = "tunemem bench autotune " + shlex.join(argv)
    result = recorded(tmp_path, name, command, held, seeds)
    assert result["machine"]["gpu"] == "none (Triton interpreter on the CPU)"


def test_a_result_whose_memory_held_is_not_a_known_kind_is_refused(tmp_path) -> None:
    base = provenance("tunemem bench live", [0], "measured")
    for held in ("complete", {"kind": "warm", "meaning": "?"}):
        with pytest.raises(ValueError, match="memory_held must be one of"):
            write_result(tmp_path, "r", {**base, "memory_held": held}, "# T\n")
    assert not list(tmp_path.iterdir())


def test_joined_results_keep_every_part_and_refuse_a_part_without_provenance() -> None:
    one = provenance("tunemem bench live --seed 1", [1], "measured")
    two = {**provenance("tunemem bench live --seed 2", [2], "measured"), "code_version": "abc"}
    joined = merged_provenance([one, two], "tunemem bench live --merge a b")
    assert joined["command"].split(" ; ") == [
        one["command"],
        two["command"],
        "tunemem bench live --merge a b",
    ]
    assert joined["seeds"] == [1, 2]
    assert joined["code_version"] == f"{one['code_version']}, abc"
    with pytest.raises(ValueError, match="code_version"):
        merged_provenance([one, {**two, "code_version": None}], "merge")
    with pytest.raises(ValueError, match="measured and replayed"):
        merged_provenance([one, {**two, "measurement": "replayed"}], "merge")


def test_a_moe_live_result_carries_its_provenance(tmp_path) -> None:
    from tunemem.bench.moe.live_h200 import write_live

    arm = {"config": {}, "us_in_run": 150.0, "timed": 16, "origin": "local", "us_now": 160.0}
    row = {"m": 1, "recorded_best": {}, "recorded_best_us": 150.0, "recorded_best_now_us": 160.0}
    rows = [{**row, "shipped": arm, "no-memory": {**arm, "us_now": 200.0}}]
    command = "python -m tunemem.bench.moe.live_h200 --shipped-dump d.json --landscape l.jsonl.gz"
    write_live(tmp_path, "mixtral", 16, rows, {}, command, {"gpu": GPU, "torch": "x"})
    result = recorded(tmp_path, "live", command, "shipped", [0])
    assert result["machine"]["gpu"] == GPU
    assert (
        "| 1 | 150.0 | 160.0 | 160.0 (1.000, local) | 200.0 (0.800, local) |"
        in (tmp_path / "live.md").read_text()
    )
