"""What `run_agent` gives a person: attempt lines with 3 significant digits, each value with the
scope it belongs to, whole lesson ids, cut text ending in an ellipsis; and a default plateau."""

from __future__ import annotations

from tunemem.agent_client.run import format_attempt

LESSON_ID = "ad3335a5-7ff1-508a-8e9c-e8a7a3cdfc2e"


def _entry(**changes: object) -> dict:
    entry = {
        "index": 0,
        "stage": "draft",
        "feasible": True,
        "latency_ms": 2.1071234,
        "best_ms": 2.1071234,
        "error_category": None,
        "origin": f"exemplar:{LESSON_ID}",
        "config": {"block_size_x": 128, "use_shmem": 0},
        "rewards": {LESSON_ID: 1.0},
        "lessons": [
            {
                "id": LESSON_ID,
                "kind": "exemplar",
                "score": 0.61034,
                "value": 0.5062299319727891,
                "value_scope": "family:amd-cdna2",
                "n": 4,
                "value_after": {"value": 0.24074074074074073, "value_scope": "chip:w6600", "n": 1},
                "text": "On mi250x (hip), convolution (convolution_kernel; problem size "
                "4096x4096): the number 6 by median latency of 4362 configurations, 1.4x faster",
            }
        ],
    }
    entry.update(changes)
    return entry


def test_values_name_their_scope_with_three_significant_digits() -> None:
    text = format_attempt(_entry(), text_width=60)
    assert "2.11 ms (best 2.11 ms)" in text
    assert "value 0.506 (family:amd-cdna2, n 4) -> 0.241 (chip:w6600, n 1)" in text
    assert "after reward +1" in text and "score 0.61" in text
    assert "0.5062299319727891" not in text and "0.24074074074074073" not in text
    assert LESSON_ID in text.splitlines()[2]  # the whole id, never cut
    assert "block_size_x=128 use_shmem=0" in text


def test_values_name_the_estimator_that_made_them() -> None:
    """The agent's values are the estimate retrieve ranked by and the report answered with:
    the line names that estimator, as `lessons top` and the lesson page do."""
    entry = _entry()
    entry["lessons"][0]["estimator"] = "generalised"
    entry["lessons"][0]["value_after"]["estimator"] = "generalised"
    text = format_attempt(entry, text_width=60)
    assert (
        "value 0.506 (generalised: family:amd-cdna2, n 4) -> 0.241 (generalised: chip:w6600, n 1)"
        in text
    )


def test_cut_text_ends_with_an_ellipsis_and_short_text_stays_whole() -> None:
    last = format_attempt(_entry(), text_width=60).splitlines()[-1].strip()
    assert last.endswith("…") and len(last) <= 60
    assert "4096x4096" not in last[-3:]
    whole = format_attempt(_entry(), text_width=500).splitlines()[-1].strip()
    assert whole.endswith("1.4x faster")


def test_infeasible_and_unreported() -> None:
    entry = _entry(feasible=False, latency_ms=None, error_category="compile", rewards={})
    entry["lessons"][0]["value_after"] = None
    text = format_attempt(entry)
    assert "infeasible (compile)" in text and "after reward n/a" in text


def test_run_agent_stops_at_a_plateau_by_default() -> None:
    from tunemem.agent_client.context import DEFAULT_PLATEAU
    from tunemem.agent_client.run import run_agent
    from tunemem.ingest.samples import TARGETS_DIR

    task = TARGETS_DIR / "convolution"  # the bundled W6600 recording, replayed; no memory
    result = run_agent(None, task, "w6600", 60, proposer="random", write_back=False)
    assert result.stop_reason == "plateau" and len(result.attempts) < 60
    latencies = [a["latency_ms"] for a in result.attempts]
    best_at = max(
        i for i, a in enumerate(result.attempts) if a["latency_ms"] == result.best_latency_ms
    )
    assert len(latencies) - 1 - best_at == DEFAULT_PLATEAU
    whole = run_agent(None, task, "w6600", 12, proposer="random", plateau=0, write_back=False)
    assert len(whole.attempts) == 12
