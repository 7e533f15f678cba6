"""`tune_moe` against a hostile memory and hostile shipped files (issue 39, cases 2 to 4): the
same untrusted-memory policy as the Kernel Tuner strategy and the Triton drop-in (one deadline
per request, no retry, a cap on the answer, one warning, then the tool's own rounds), every
configuration checked against vLLM's space before the user's timing function sees it, shapes
that are no MoE layer refused at every door, and `--out` checked before the first timing.

The memory is `hostile_memory.HostileMemory` (SYNTHETIC answers, no service); the timing
function is SYNTHETIC (a formula, recording what it is given).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_client.hostile_memory import HostileMemory
from tunemem.agent_client.tuners.moe.memory import (
    MAX_PAGES,
    MemoryUnavailableWarning,
    entries_of,
)
from tunemem.agent_client.tuners.moe.tune import MoeShape, tune_moe
from tunemem.ingest.readers.vllm_moe import read as read_vllm
from tunemem.ingest.records import TrajectoryRecord
from tunemem.kernels.moe_space import config_problem

SHAPE = MoeShape(8, 64, 128, 2)
SIZES = [1, 64]
GOOD = {
    "BLOCK_SIZE_M": 16,
    "BLOCK_SIZE_N": 64,
    "BLOCK_SIZE_K": 128,
    "GROUP_SIZE_M": 1,
    "num_warps": 4,
    "num_stages": 3,
}
CRAFTED = [
    {**GOOD, "num_stages": 99},
    {**GOOD, "BLOCK_SIZE_M": 2**30},
    {**GOOD, "num_warps": 3},
    {**GOOD, "GROUP_SIZE_M": 0},
    {**GOOD, "BLOCK_SIZE_N": 2**70},
]


def shipped_lesson(
    lesson_id: str, configs: list[dict[str, Any]], experts: Any = 8, n: Any = 64
) -> dict[str, Any]:
    """A vLLM file as the memory lists it (SYNTHETIC): one exemplar, one config per M."""
    return {
        "id": lesson_id,
        "kind": "exemplar",
        "applicability": {"chips": ["h100"], "signature": {"E": experts, "N": n, "dtype": None}},
        "hint": {
            "by_shape": [
                {"config": config, "shapes": [{"M": m}]}
                for config, m in zip(configs, [1, 64, 1, 64, 1, 64], strict=False)
            ]
        },
    }


class Recording:
    """A SYNTHETIC timing function that records every configuration it is given."""

    def __init__(self) -> None:
        self.seen: list[dict[str, int]] = []

    def __call__(self, config: dict[str, int], num_tokens: int, *_args: Any) -> float:
        self.seen.append(dict(config))
        return 10.0 + config["BLOCK_SIZE_M"] / 16 + config["num_stages"] + num_tokens / 64


@pytest.fixture
def hostile() -> Iterator[HostileMemory]:
    memory = HostileMemory()
    memory.lessons = [shipped_lesson("good", [GOOD, GOOD])]
    yield memory
    memory.close()


def _tune(hostile: HostileMemory, tmp_path: Path, budget: int = 12):
    timing = Recording()
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tune_moe(
            SHAPE,
            SIZES,
            timing,
            memory_url=hostile.url,
            device_name="Test GPU",
            budget=budget,
            out=tmp_path,
            timeout_s=1.0,
        )
    took = time.monotonic() - started
    ours = [str(w.message) for w in caught if w.category is MemoryUnavailableWarning]
    assert all(config_problem(c) is None for c in timing.seen), timing.seen
    (record,) = list(read_vllm(result.path))
    assert isinstance(record, TrajectoryRecord)
    for attempt in record.attempts:
        assert config_problem({k: v for k, v in attempt.params.items() if k != "M"}) is None
    for m in SIZES:
        assert len(result.timed[m]) == budget  # the tool's own rounds filled the budget
    return result, ours, took, timing


FAILING = ["hang", "trickle", "error", "huge"]


@pytest.mark.parametrize("mode", FAILING)
def test_a_failing_suggest_costs_one_deadline_and_one_warning(hostile, tmp_path, mode):
    hostile.mode = mode
    result, said, took, _ = _tune(hostile, tmp_path)
    assert len(said) == 1, said
    assert hostile.requests.get("/v1/suggest") == 1  # no retry, never asked again
    assert took < 8, f"{mode}: {took:.1f} s"
    assert result.memory_used  # the shipped file still opened the run


@pytest.mark.parametrize(
    "malformed", ["text", "list", "suggestions-text", "suggestions-scalars", "config-text"]
)
def test_a_malformed_suggest_answer_is_one_warning_never_an_exception(hostile, tmp_path, malformed):
    hostile.mode, hostile.malformed = "malformed", malformed
    _, said, _, _ = _tune(hostile, tmp_path)
    assert len(said) == 1, said
    assert hostile.requests.get("/v1/suggest", 0) <= 2


@pytest.mark.parametrize("mode", ["outside", "restricted", "repeat", "wrong_types", "honest"])
def test_wrong_suggestions_are_never_timed(hostile, tmp_path, mode):
    hostile.mode = mode
    result, said, _, _ = _tune(hostile, tmp_path)
    assert len(said) <= 1, said
    assert hostile.requests.get("/v1/suggest", 0) <= 2 * len(SIZES) + 1


@pytest.mark.parametrize("mode", [*FAILING, "malformed", "endless"])
def test_a_failing_shipped_listing_leaves_the_documented_sample(hostile, tmp_path, mode):
    hostile.lessons_mode = mode
    result, said, took, _ = _tune(hostile, tmp_path)
    assert len(said) == (0 if mode == "endless" else 1), said
    assert not result.memory_used
    assert hostile.requests.get("/v1/lessons", 0) <= (MAX_PAGES if mode == "endless" else 1)
    assert took < 15, f"{mode}: {took:.1f} s"
    for m in SIZES:
        first = [r["origin"] for r in result.timed[m] if r["round"] == 1]
        assert set(first) <= {"vllm-default", "sample"} and "sample" in first


def test_a_busy_memory_is_asked_again_after_its_retry_after(hostile, tmp_path, monkeypatch):
    """Busy is not away: the memory is left alone for its Retry-After (0.1 s here), then asked
    again (test_agent_client_moe_policy: a minute's Retry-After is one question)."""
    hostile.mode, hostile.retry_after = "busy", "0.1"
    slow = Recording.__call__
    monkeypatch.setattr(Recording, "__call__", lambda *a: (time.sleep(0.05), slow(*a))[1])
    result, said, _, _ = _tune(hostile, tmp_path)
    assert said == []
    assert hostile.requests.get("/v1/suggest", 0) > 1
    assert any("busy" in w for w in result.warnings)


def test_crafted_shipped_files_never_reach_the_timing_function(hostile, tmp_path):
    """Issue 39, case 3: a file with E=0 or E=-8 and configurations outside vLLM's space
    (num_stages 99, BLOCK_SIZE_M 2^30, num_warps 3...) beside one good file."""
    hostile.lessons = [
        shipped_lesson("zero", [GOOD], experts=0),
        shipped_lesson("negative", [GOOD], experts=-8),
        shipped_lesson("text", [GOOD], experts="8"),
        shipped_lesson("crafted", CRAFTED),
        shipped_lesson("good", [GOOD, GOOD]),
    ]
    result, said, _, timing = _tune(hostile, tmp_path)
    assert said == []
    shipped = [r for m in SIZES for r in result.timed[m] if r["origin"].startswith("shipped:")]
    assert shipped and all(r["config"] == GOOD for r in shipped)
    assert GOOD in timing.seen


def test_entries_of_refuses_what_is_no_layer_or_no_configuration_of_vllm():
    assert entries_of(shipped_lesson("zero", [GOOD], experts=0)) == []
    assert entries_of(shipped_lesson("negative", [GOOD], n=-64)) == []
    assert entries_of(shipped_lesson("crafted", CRAFTED)) == []
    for junk in (None, [], "x", {"applicability": [1], "hint": "x"}):
        assert entries_of(junk) == []
    assert len(entries_of(shipped_lesson("good", [GOOD, GOOD]))) == 2


@pytest.mark.parametrize("config", CRAFTED)
def test_a_caller_space_outside_vllms_is_refused_before_any_timing(config):
    timing = Recording()
    with pytest.raises(ValueError, match="outside vLLM's space"):
        tune_moe(SHAPE, [1], timing, device_name="Test GPU", space=[GOOD, config])
    assert timing.seen == []


def test_out_is_checked_before_the_first_timing(tmp_path):
    """Issue 39, case 4: a file, or a folder that cannot be made, is refused up front."""
    afile = tmp_path / "a-file"
    afile.write_text("x")
    for out in (afile, afile / "below"):
        timing = Recording()
        with pytest.raises(ValueError, match="--out"):
            tune_moe(SHAPE, [1], timing, device_name="Test GPU", budget=4, out=out)
        assert timing.seen == []


def test_cli_refuses_a_bad_out_in_one_line_before_timing(tmp_path):
    from typer.testing import CliRunner

    from tunemem.cli.app import app

    afile = tmp_path / "a-file"
    afile.write_text("x")
    args = ["tune", "moe", "-E", "8", "-N", "64", "--hidden", "128", "--topk", "2"]
    args += ["--device-name", "Test GPU", "--out", str(afile), "--budget", "2"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2, done.output
    assert "--out" in done.output and "Traceback" not in done.output


def test_a_vllm_file_of_no_experts_is_a_reject(tmp_path):
    import json

    from tunemem.ingest.readers import read_any
    from tunemem.ingest.records import RejectedRecord

    for experts in (0, 8):
        path = tmp_path / f"E={experts},N=64,device_name=NVIDIA_H100.json"
        path.write_text(json.dumps({"1": GOOD}))
    records = list(read_any(sorted(tmp_path.glob("*.json")), fmt="vllm-moe"))
    rejects = [r for r in records if isinstance(r, RejectedRecord)]
    assert len(rejects) == 1 and "E=0" in rejects[0].path and "positive" in rejects[0].reason
    assert sum(isinstance(r, TrajectoryRecord) for r in records) == 1


@pytest.mark.parametrize("experts", [0, -8, True, 2.5])
def test_an_upload_of_a_layer_of_no_experts_is_refused(client, experts):
    run = {
        "version": 1,
        "source_format": "synthetic",
        "source": "runs/hostile-moe",
        "task": {
            "op": "fused_moe",
            "kernel": "fused_moe_kernel",
            "signature": {"E": experts, "N": 64},
        },
        "context": {"chip": "h100", "backend": "cuda"},
        "attempts": [{"index": 0, "params": {**GOOD, "M": 1}, "latency_ms": 0.1}],
    }
    response = client.post("/v1/trajectories", json={"trajectories": [run]})
    body = response.json()
    assert response.status_code == 422 or body.get("rejected"), body
    assert "positive integer" in response.text
