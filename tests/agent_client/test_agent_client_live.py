"""The agent end to end against a live memory service over HTTP, on SYNTHETIC replay tasks.

The service runs in-process behind a real uvicorn server (hashing embedder, in-memory index,
so no model loads); the agent only talks to it through `MemoryClient`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tunemem.agent_client import MemoryClient, Outcome
from tunemem.agent_client.proposers import create_proposer
from tunemem.agent_client.run import run_agent, run_graph
from tunemem.ingest.readers import read_any
from tunemem.ingest.records import TrajectoryRecord
from tunemem.kernels.runners.base import EvalResult
from tunemem.kernels.runners.replay import ReplayRunner

pytest.importorskip("tunemem.memory_service.http.app")
from tunemem.bench.common.memory_server import LiveService  # noqa: E402


@pytest.fixture
def live(tmp_path: Path, make_synthetic_cache: Any) -> Iterator[tuple[str, Path]]:
    """A service that has ingested a synthetic A100 run; yields its URL and an A4000 task."""
    service = LiveService({"index": "memory", "embedder": "hashing", "dedup_threshold": 1.0})
    try:
        source = make_synthetic_cache(tmp_path / "A100.json.gz")
        records = [r for r in read_any([source]) if isinstance(r, TrajectoryRecord)]
        with MemoryClient(service.url) as client:
            summary = client.upload_trajectories([r.to_dict() for r in records])
            assert summary["lessons_added"] > 0
        yield service.url, make_synthetic_cache(tmp_path / "A4000.json.gz", "NVIDIA RTX A4000")
    finally:
        service.close()


def _history(url: str, lesson_id: str) -> list[dict[str, Any]]:
    with MemoryClient(url) as client:
        return client._call("GET", f"/v1/lessons/{lesson_id}/history")["outcomes"]


def test_agent_tunes_over_http_and_credits_lessons(live: tuple[str, Path]) -> None:
    url, task = live
    printed: list[dict[str, Any]] = []
    result = run_agent(url, task, "a4000", 6, on_attempt=printed.append, write_back=False)
    assert [a["index"] for a in result.attempts] == list(range(6)) == [p["index"] for p in printed]
    first = result.attempts[0]
    assert first["feasible"] and first["origin"].startswith("exemplar:")
    assert first["stage"] == "draft" and result.attempts[1]["stage"] == "refine"
    credited = first["lessons"][0]
    assert credited["id"] == first["used"][0] and credited["value_after"]["n"] >= 1
    history = _history(url, credited["id"])
    assert [o["retrieval_id"] for o in history] == [first["retrieval_id"]]
    assert result.best_latency_ms == min(a["latency_ms"] for a in result.attempts if a["feasible"])


class CrashingRunner(ReplayRunner):
    """Evaluates normally, then dies (as a killed process would) at one attempt."""

    def __init__(self, path: Path, crash_at: int) -> None:
        super().__init__(path=path)
        self.crash_at = crash_at
        self.calls = 0

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        self.calls += 1
        if self.calls == self.crash_at + 1:
            raise KeyboardInterrupt("simulated kill")
        return super().evaluate(config)


class ReportThenDie(MemoryClient):
    """Sends one report, then dies before the agent can record that it was sent."""

    def __init__(self, url: str, die_at_report: int) -> None:
        super().__init__(url)
        self.reports = 0
        self.die_at_report = die_at_report

    def report(self, *args: Any, **kwargs: Any) -> Any:
        receipt = super().report(*args, **kwargs)
        self.reports += 1
        if self.reports == self.die_at_report:
            raise KeyboardInterrupt("killed after the report went out")
        return receipt


def test_killed_run_resumes_where_it_stopped(live: tuple[str, Path], tmp_path: Path) -> None:
    url, task = live
    checkpoint = tmp_path / "agent.sqlite"
    with MemoryClient(url) as client, pytest.raises(KeyboardInterrupt):
        run_graph(
            CrashingRunner(task, crash_at=3),
            create_proposer("structured"),
            client,
            6,
            run_id="run-1",
            checkpoint=checkpoint,
        )
    resumed_runner = CrashingRunner(task, crash_at=99)
    with MemoryClient(url) as client:
        result = run_graph(
            resumed_runner,
            create_proposer("structured"),
            client,
            6,
            run_id="run-1",
            checkpoint=checkpoint,
        )
    assert [a["index"] for a in result.attempts] == list(range(6))
    assert resumed_runner.calls == 3  # attempts 0-2 were not evaluated again
    assert len({tuple(a["config"].values()) for a in result.attempts}) == 6
    # Calling again with the finished run's id returns it without doing anything.
    again = run_graph(
        CrashingRunner(task, crash_at=0),
        create_proposer("structured"),
        None,
        6,
        run_id="run-1",
        checkpoint=checkpoint,
    )
    assert again.attempts == result.attempts


def test_report_retried_after_a_kill_counts_once(live: tuple[str, Path], tmp_path: Path) -> None:
    url, task = live
    checkpoint = tmp_path / "agent.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run_graph(
            ReplayRunner(path=task),
            create_proposer("structured"),
            ReportThenDie(url, 1),
            3,
            run_id="run-2",
            checkpoint=checkpoint,
        )
    result = run_graph(
        ReplayRunner(path=task),
        create_proposer("structured"),
        ReportThenDie(url, 0),
        3,
        run_id="run-2",
        checkpoint=checkpoint,
    )
    first = result.attempts[0]
    assert first["used"], "the first attempt credits the exemplar it tried"
    history = _history(url, first["used"][0])
    assert [o["retrieval_id"] for o in history].count(first["retrieval_id"]) == 1


def test_same_idempotency_key_is_recorded_once(live: tuple[str, Path]) -> None:
    url, _ = live
    with MemoryClient(url) as client:
        retrieval = client.retrieve(
            {"op": "synthetic"},
            {"chip": "a4000"},
            "draft",
            k=1,
            query="fastest synthetic configuration",
            options={"similarity_floor": -1.0},
        )
        lesson = retrieval.lessons[0].id
        outcome = Outcome(True, True, 1.5)
        first = client.report(retrieval.retrieval_id, outcome, [lesson], idempotency_key="k-1")
        second = client.report(retrieval.retrieval_id, outcome, [lesson], idempotency_key="k-1")
    assert first.rewards == second.rewards
    assert len(_history(url, lesson)) == 1


def test_finished_run_is_written_back_for_distillation(live: tuple[str, Path]) -> None:
    url, task = live
    with MemoryClient(url) as client:
        before = client.health()["counts"]["trajectories"]
    result = run_agent(url, task, "a4000", 3, run_id="write-back-run")
    with MemoryClient(url) as client:
        counts = client.health()["counts"]
    assert result.stop_reason == "budget"
    assert counts["trajectories"] == before + 1


def test_hidden_chip_lessons_are_never_proposed_nor_credited(live: tuple[str, Path]) -> None:
    url, task = live
    with MemoryClient(url) as client:
        result = run_graph(
            ReplayRunner(path=task),
            create_proposer("structured"),
            client,
            4,
            run_id="hidden",
            hidden_chips=("a100",),
        )
    # Every lesson in memory was recorded on the (synthetic) A100, so none may shape a proposal.
    assert all(not a["used"] and not a["origin"].startswith("exemplar:") for a in result.attempts)
    shown = run_graph(
        ReplayRunner(path=task), create_proposer("structured"), MemoryClient(url), 1, run_id="shown"
    )
    assert shown.attempts[0]["used"]
