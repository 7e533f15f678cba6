"""Reports that say what the attempt did: credit by whether each used lesson was followed, and
repeated timings whose spread tempers the update; bad timings are refused and change nothing."""

from __future__ import annotations

import pytest

LESSONS = [
    {
        "kind": "failure",
        "text": "on the A100, 83 of 517 configurations with tile_size_y=4, read_only=1 failed",
        "applicability": {"op": "convolution", "chips": ["a100"]},
        "hint": {"avoid": {"tile_size_y": 4, "read_only": 1}, "error_category": "runtime"},
    },
    {
        "kind": "exemplar",
        "text": "the convolution's fastest configuration on the MI250X tiles 64x8",
        "applicability": {"op": "convolution", "chips": ["mi250x"]},
        "hint": {"config": {"block_size_x": 64, "tile_size_y": 8}},
    },
]
TRIED = {"block_size_x": 128, "tile_size_y": 4, "read_only": 1}


def _retrieve(client, stage: str = "draft") -> tuple[str, dict[str, str]]:
    body = {
        "query": "tile the convolution",
        "stage": stage,
        "task": {"op": "convolution"},
        "context": {"chip": "w6600"},
        "k": 5,
    }
    got = client.post("/v1/retrieve", json=body).json()
    return got["retrieval_id"], {lesson["kind"]: lesson["id"] for lesson in got["lessons"]}


@pytest.fixture
def ids(client) -> dict[str, str]:
    assert client.post("/v1/lessons", json={"lessons": LESSONS}).status_code == 201
    return _retrieve(client)[1]


def _values(service, lesson_id: str) -> dict[tuple[str, str], tuple[int, float]]:
    return {(v.stage, v.scope): (v.n, v.q) for v in service.lesson_history(lesson_id).values}


def test_a_report_with_its_configuration_credits_by_the_advice(client, service, ids) -> None:
    rid, _ = _retrieve(client)
    outcome = {"compiled": True, "correct": True, "latency_ms": 1.73, "config": TRIED}
    answer = client.post(
        "/v1/outcomes", json={"retrieval_id": rid, "used": list(ids.values()), "outcome": outcome}
    ).json()
    assert answer["credit"] == {ids["failure"]: "contradicted", ids["exemplar"]: "not_followed"}
    assert answer["rewards"] == {ids["failure"]: -1.0}
    assert _values(service, ids["failure"])[("draft", "chip:w6600")] == (1, pytest.approx(-0.3))
    assert _values(service, ids["exemplar"]) == {}  # not used: nothing learned about it
    before = {lid: _values(service, lid) for lid in ids.values()}
    assert service.rebuild_values() == 1
    assert {lid: _values(service, lid) for lid in ids.values()} == before


def test_without_a_configuration_every_used_lesson_gets_the_stage_reward(
    client, service, ids
) -> None:
    rid, _ = _retrieve(client)
    outcome = {"compiled": True, "correct": True, "latency_ms": 1.73}
    answer = client.post(
        "/v1/outcomes", json={"retrieval_id": rid, "used": list(ids.values()), "outcome": outcome}
    ).json()
    assert answer["credit"] == {}
    assert answer["rewards"] == {lid: 1.0 for lid in ids.values()}


def _refine_step(client, service, lesson_id: str, **timing) -> float:
    rid, _ = _retrieve(client, "refine")
    outcome = {"compiled": True, "correct": True, "best_before_ms": 2.0, **timing}
    response = client.post(
        "/v1/outcomes", json={"retrieval_id": rid, "used": [lesson_id], "outcome": outcome}
    )
    assert response.status_code == 200, response.text
    return response.json()["timing_weight"]


def test_a_single_timing_moves_a_refine_value_less_than_tight_repeated_ones(
    client, service, ids, make_service, tmp_path
) -> None:
    lesson = ids["exemplar"]
    weight = _refine_step(client, service, lesson, latency_ms=1.0)
    single = _values(service, lesson)[("refine", "chip:w6600")][1]
    assert weight == pytest.approx(0.5)
    # the same outcome on a fresh store, timed five times within 1%
    from fastapi.testclient import TestClient

    from tunemem.memory_service.http.app import create_app

    other = make_service(tmp_path / "other")
    with TestClient(create_app(other)) as second:
        assert second.post("/v1/lessons", json={"lessons": LESSONS}).status_code == 201
        lesson = _retrieve(second)[1]["exemplar"]
        weight = _refine_step(second, other, lesson, timings_ms=[1.0, 1.01, 0.99, 1.0, 1.0])
        tight = _values(other, lesson)[("refine", "chip:w6600")][1]
    assert weight > 0.99
    assert 0 < single < tight


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        ({"timings_ms": []}, "invalid_request"),
        ({"timings_ms": [1.0, -1.0]}, "invalid_request"),
        ({"timings_ms": [1.0, "fast"]}, "invalid_request"),
        ({"timings_ms": [1.0, 1.2], "latency_ms": 3.0}, "invalid_timings"),
        ({"timings_ms": [1.0, 1.2], "latency_spread_ms": 0.1}, "invalid_timings"),
        ({"latency_spread_ms": 0.1, "repetitions": 5}, "invalid_timings"),
        ({"latency_ms": 1.0, "latency_spread_ms": -0.1}, "invalid_request"),
        ({"latency_ms": 1.0, "repetitions": 0}, "invalid_request"),
        ({"config": {"": 1}}, "invalid_request"),
        ({"config": {"block_size_x": [128]}}, "invalid_request"),
    ],
)
def test_bad_timings_or_configurations_are_refused_and_change_nothing(
    client, service, ids, outcome, code
) -> None:
    rid, _ = _retrieve(client)
    body = {"retrieval_id": rid, "outcome": {"compiled": True, "correct": True, **outcome}}
    response = client.post("/v1/outcomes", json=body)
    assert response.status_code == 422 and response.json()["code"] == code
    assert service.counts()["outcomes"] == 0


def test_a_resource_limit_failure_warns_only_where_the_limit_applies(client) -> None:
    lesson = {
        "kind": "failure",
        "text": "on the A100, block_size_x=1024 with use_shmem=1 ran out of shared memory",
        "applicability": {"op": "convolution", "chips": ["a100"], "backends": ["cuda"]},
        "hint": {"avoid": {"block_size_x": 1024, "use_shmem": 1}, "error_category": "resources"},
    }
    assert client.post("/v1/lessons", json={"lessons": [lesson]}).status_code == 201

    def seen_on(chip: str) -> dict:
        body = {"query": "tile the convolution", "stage": "draft", "task": {"op": "convolution"}}
        got = client.post("/v1/retrieve", json={**body, "context": {"chip": chip}}).json()
        assert "lessons" in got, got
        (found,) = got["lessons"]
        return found

    on_h100 = seen_on("h100")
    assert on_h100["warning"] is False and "not as avoid" in on_h100["caveat"]
    on_a4000 = seen_on("a4000")
    assert on_a4000["warning"] is True and "limit applies" in on_a4000["caveat"]
    on_a100 = seen_on("a100")
    assert on_a100["warning"] is True and on_a100["caveat"] is None


def test_a_suggest_observation_may_carry_its_spread_but_not_without_a_latency(client) -> None:
    body = {
        "task": {"op": "convolution"},
        "context": {"chip": "w6600"},
        "space": {"params": {"block_size_x": [64, 128], "tile_size_y": [4, 8]}},
        "k": 1,
    }
    ok = {"config": {"block_size_x": 64, "tile_size_y": 4}, "latency_ms": 2.0}
    spread = {**ok, "latency_spread_ms": 0.1, "repetitions": 7}
    answer = client.post("/v1/suggest", json={**body, "observations": [spread]})
    assert answer.status_code == 200, answer.text
    bad = {"config": ok["config"], "feasible": False, "latency_spread_ms": 0.1}
    refused = client.post("/v1/suggest", json={**body, "observations": [bad]})
    assert refused.status_code == 422 and "latency_spread_ms" in refused.json()["message"]
