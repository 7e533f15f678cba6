"""Service benchmark on a tiny SYNTHETIC store: a real server process and driver processes,
result structure, ordered percentiles, files; the driver, the profile attribution.

No timing is asserted; the numbers come from `tunemem bench service`, not from this test.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tunemem.bench.common.results import provenance_line
from tunemem.bench.common.seeds import combine_runs
from tunemem.bench.service.driver import fresh_query, percentiles
from tunemem.bench.service.profile import attribute
from tunemem.bench.service.report import markdown
from tunemem.bench.service.run import run_service_bench
from tunemem.bench.service.synthetic_store import synthetic_lessons, synthetic_values


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    result = run_service_bench(
        [300],
        out,
        embedder="hashing",
        distinct=120,
        concurrency=(1, 2),
        open_fractions=(0.5,),
        duration=1.5,
        warmup=0.3,
        profile_seconds=0,
        floor_queries=8,
        name="tiny",
    )
    return result, out


def test_every_run_measures_both_endpoints_without_errors(tiny_result: tuple) -> None:
    result, _ = tiny_result
    (case,) = result["cases"]
    assert (case["lessons"], case["mode"], case["workers"]) == (300, "embedded", 1)
    assert [(r["mode"], r["concurrency"]) for r in case["runs"]] == [
        ("closed", 1),
        ("closed", 2),
        ("open", 2),
    ]
    for run in case["runs"]:
        assert run["errors"] == {}
        assert run["pairs"] == run["retrieve_ms"]["n"] == run["report_ms"]["n"] > 0
        for key in ("retrieve_ms", "report_ms", "pair_ms"):
            p = run[key]
            assert 0 < p["p50"] <= p["p95"] <= p["p99"] <= p["max"]
    open_run = case["runs"][-1]
    closed_max = max(r["pairs_per_s"] for r in case["runs"] if r["mode"] == "closed")
    assert open_run["rate"] == pytest.approx(max(0.5 * closed_max, 1.0), abs=0.051)
    assert case["build"]["embedded_lessons"] == 120 and case["build"]["value_rows"] > 0
    floor = case["floor"]
    assert floor["embed_ms"]["n"] == floor["index_query_ms"]["n"] == 8
    assert floor["index_query_n"] >= 10
    assert case["server_memory"]["peak_rss_mb"] > 0
    assert case["profile"]["available"] is False


def test_result_is_labelled_synthetic_and_written(tiny_result: tuple) -> None:
    result, out = tiny_result
    assert "SYNTHETIC" in result["synthetic"]
    assert "not measured" in result["server_mode"]
    saved = json.loads((out / "tiny.json").read_text())
    assert saved["cases"] == json.loads(json.dumps(result["cases"]))
    table = (out / "tiny.md").read_text()
    assert provenance_line(saved) in table  # how to make it again, under the title
    assert table.replace("\n\n" + provenance_line(saved), "", 1) == markdown(result)
    assert "| 300 | embedded (1 worker) | closed c=1 |" in table and "SYNTHETIC" in table
    assert "shared" in table and "## Floor" in table
    assert saved["memory_held"]["kind"] == "none"  # a service figure, not a tuning memory's
    assert "Memory held: **none**" in table


def test_the_summary_names_each_loop_alike_in_every_repetition(tiny_result: tuple) -> None:
    """The summary holds each loop's p50 / p99, pairs a second, the peak RSS and the load, under
    names without the open loop's rate, so repetitions combine into a mean and range."""
    result, out = tiny_result
    (case,) = result["cases"]
    figures = result["summary"]["embedded 300"]
    assert list(figures)[:3] == ["closed c=1", "closed c=2", "open 0.5 of the closed max"]
    one = case["runs"][0]
    assert figures["closed c=1"]["retrieve_p50_ms"] == one["retrieve_ms"]["p50"]
    assert figures["closed c=1"]["report_p99_ms"] == one["report_ms"]["p99"]
    assert figures["closed c=2"]["pairs_per_s"] == case["runs"][1]["pairs_per_s"]
    assert figures["peak_rss_mb"] == case["server_memory"]["peak_rss_mb"] > 0
    load = result["summary"]["load_average_1min"]
    assert load["start"] >= 0 and load["end"] >= 0
    assert "when the bench started" in (out / "tiny.md").read_text()
    again = {**json.loads((out / "tiny.json").read_text()), "seeds": [1]}
    again["summary"]["embedded 300"]["closed c=1"]["pairs_per_s"] = 0.0
    combined = combine_runs([json.loads((out / "tiny.json").read_text()), again], "x")
    pairs = combined["summary"]["embedded 300"]["closed c=1"]["pairs_per_s"]
    assert pairs == {"mean": one["pairs_per_s"] / 2, "low": 0.0, "high": one["pairs_per_s"]}


def test_synthetic_lessons_are_unique_and_deterministic() -> None:
    rows = synthetic_lessons(0, 200, seed=7)
    again = synthetic_lessons(0, 200, seed=7)
    stamps = ("created_at", "updated_at")
    assert [{k: v for k, v in r.items() if k not in stamps} for r in rows] == [
        {k: v for k, v in r.items() if k not in stamps} for r in again
    ]
    assert len({r["id"] for r in rows}) == len({r["content_hash"] for r in rows}) == 200
    assert all(r["provenance"]["synthetic"] for r in rows)
    values = synthetic_values(rows, 0.5, seed=1)
    scopes = {v["scope"] for v in values}
    assert "global" in scopes and any(s.startswith("chip:") for s in scopes)
    assert {v["lesson_id"] for v in values} <= {r["id"] for r in rows}


def test_driver_queries_are_fresh_and_valid_requests() -> None:
    from tunemem.memory_service.core.schemas.learning import RetrieveRequest

    rng = random.Random(3)
    bodies = [fresh_query(rng, i, "t") for i in range(300)]
    assert len({b["query"] for b in bodies}) == 300  # every text is new
    for body in bodies[:20]:
        RetrieveRequest(**body)


def test_percentiles_of_known_values() -> None:
    p = percentiles([float(v) for v in range(1, 101)])
    assert (p["p50"], p["p95"], p["p99"], p["max"]) == (50.5, 95.05, 99.01, 100.0)
    assert percentiles([]) == {"n": 0}


def test_profile_attribution_by_area_and_operation() -> None:
    raw = "\n".join(
        [
            "run (t.py:1);LearningLoop.retrieve (core/learning.py:9);"
            "CachedEmbedder._encode (tunemem/memory_service/core/embedding/factory.py:5);"
            "linear (torch/nn.py:1) 6",
            "run (t.py:1);LearningLoop.retrieve (core/learning.py:9);"
            "Collection.query (Collection.py:2) 3",
            "run (t.py:1);LearningLoop.report (core/learning.py:99);"
            "Session.commit (sqlalchemy/orm/session.py:1) 1",
            "run (t.py:1);needs.<locals>.dependency (http/deps.py:3);Session.exec (x.py:1) 2",
            "Thread.run (threading.py:1);Queue.get (queue.py:1);Condition.wait (threading.py:2) 50",
            "handle (uvicorn/h.py:1);parse (uvicorn/h.py:2) 4",
        ]
    )
    result = attribute(raw)
    assert (result["busy_samples"], result["idle_samples"]) == (16, 50)
    cells = {(r["area"], r["operation"]): r["samples"] for r in result["rows"]}
    assert cells == {
        ("retrieve", "embedding"): 6,
        ("retrieve", "index query"): 3,
        ("report", "SQL commit"): 1,
        ("auth", "SQL statements"): 2,
        ("HTTP stack", "other Python"): 4,
    }
    assert sum(r["share"] for r in result["rows"]) == pytest.approx(1.0, abs=0.01)


def test_driver_connection_resends_once_when_the_server_closed_it_while_idle() -> None:
    """A keep-alive connection the server closed (idle timeout) is reopened, not an error."""
    import asyncio

    from tunemem.bench.service.driver import Connection

    async def scenario() -> list[int]:
        served = []

        async def one_request_then_close(reader, writer) -> None:  # type: ignore[no-untyped-def]
            await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(2)
            served.append(1)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
            writer.close()  # as uvicorn does with an idle keep-alive connection

        server = await asyncio.start_server(one_request_then_close, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = Connection("127.0.0.1", port, {})
        statuses = [(await conn.post("/x", b"{}"))[0] for _ in range(3)]
        conn.close()
        server.close()
        await server.wait_closed()
        assert len(served) == 3
        return statuses

    assert asyncio.run(scenario()) == [200, 200, 200]
