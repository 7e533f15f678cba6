"""POST /v1/suggest through HTTP: the contract, validity in the space, no repeats, credit of
reported outcomes, tenant scope with keys, and bad input as 4xx with a code.

The runs are synthetic (made-up latencies of a two-parameter space), written for these tests.
"""

from __future__ import annotations

import itertools

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from tunemem.agent_client.graph import query_text as agent_query_text
from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.http.app import create_app

BLOCKS = [32, 64, 128, 256, 512, 1024]
WARPS = [1, 2, 4, 8]
SPACE = {"BLOCK": BLOCKS, "WARPS": WARPS}
TASK = {"op": "softmax", "kernel": "softmax_rows"}


def synthetic_latency(chip: str, block: int, warps: int) -> float:
    """Made-up timings: 256 x 4 is best on a100, 512 x 8 on mi250x."""
    best = {"a100": (256, 4), "mi250x": (512, 8)}[chip]
    return (
        1.0
        + abs(BLOCKS.index(block) - BLOCKS.index(best[0]))
        + abs(WARPS.index(warps) - WARPS.index(best[1])) * 0.5
    )


def synthetic_run(chip: str) -> dict:
    backend = "cuda" if chip == "a100" else "hip"
    configs = list(itertools.product(BLOCKS, WARPS))
    return {
        "version": 1,
        "source_format": "synthetic",
        "source": f"runs/softmax-{chip}",
        "task": TASK,
        "context": {"chip": chip, "backend": backend},
        "attempts": [
            {
                "index": i,
                "params": {"BLOCK": b, "WARPS": w},
                "latency_ms": synthetic_latency(chip, b, w),
            }
            for i, (b, w) in enumerate(configs)
        ],
    }


def suggest_body(**extra) -> dict:
    body = {"task": TASK, "context": {"chip": "a100"}, "space": {"params": SPACE}, "k": 5}
    body.update(extra)
    return body


@pytest.fixture
def filled(client: TestClient) -> TestClient:
    runs = [synthetic_run("a100"), synthetic_run("mi250x")]
    response = client.post("/v1/trajectories", json={"trajectories": runs})
    assert response.status_code in (200, 201), response.text
    return client


def test_suggestions_follow_the_contract_and_credit_reported_outcomes(filled: TestClient):
    response = filled.post("/v1/suggest", json=suggest_body())
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= {"retrieval_id", "stage", "chip", "suggestions", "warnings", "settings"}
    assert body["stage"] == "draft" and body["chip"] == "a100"
    suggestions = body["suggestions"]
    assert len(suggestions) == 5
    first = suggestions[0]
    # The memory's own chip's best configuration comes first, as an exemplar with its lesson.
    assert first["source"] == "exemplar"
    assert first["config"] == {"BLOCK": 256, "WARPS": 4}
    assert [set(lesson) for lesson in first["lessons"]] == [
        {"id", "value", "value_scope", "n", "source_run"}
    ]
    for item in suggestions:
        assert item["source"] in {"exemplar", "preference", "model", "search"}
        assert item["config"]["BLOCK"] in BLOCKS and item["config"]["WARPS"] in WARPS
    keys = [tuple(item["config"].values()) for item in suggestions]
    assert len(set(keys)) == len(keys)

    # Reporting against the suggestion's retrieval credits its lessons.
    used = [lesson["id"] for lesson in first["lessons"]]
    report = {
        "retrieval_id": body["retrieval_id"],
        "used": used,
        "outcome": {"compiled": True, "correct": True, "latency_ms": 1.0},
    }
    answer = filled.post("/v1/outcomes", json=report)
    assert answer.status_code == 200, answer.text
    assert set(answer.json()["rewards"]) == set(used)
    history = filled.get(f"/v1/lessons/{used[0]}/history").json()
    assert [o["retrieval_id"] for o in history["outcomes"]] == [body["retrieval_id"]]


def test_the_draft_opens_with_the_exemplars_the_agents_own_retrieval_ranks_first(
    filled: TestClient,
):
    """A run through suggest starts where the agent's structured proposer would: the retrieval
    behind suggest is worded as the agent words its own, so the exemplars come in that order."""
    context = {"chip": "mi250x", "backend": "hip"}
    body = filled.post("/v1/suggest", json=suggest_body(context=context, k=5)).json()
    agent_query = agent_query_text({"op": TASK["op"], **context}, "draft", list(SPACE))
    retrieved = filled.post(
        "/v1/retrieve",
        json={"task": TASK, "context": context, "stage": "draft", "k": 10, "query": agent_query},
    ).json()
    exemplar_configs = []
    for lesson in retrieved["lessons"]:
        config = (lesson.get("hint") or {}).get("config")
        if isinstance(config, dict) and config not in exemplar_configs:
            exemplar_configs.append(config)
    suggested = [item["config"] for item in body["suggestions"] if item["source"] == "exemplar"]
    assert suggested and suggested == exemplar_configs[: len(suggested)]
    assert body["suggestions"][0]["config"] == {"BLOCK": 512, "WARPS": 8}  # mi250x's own best


def test_observed_configurations_are_never_suggested_again(filled: TestClient):
    observations = []
    seen = set()
    for _ in range(6):
        body = filled.post("/v1/suggest", json=suggest_body(observations=observations)).json()
        for item in body["suggestions"]:
            key = (item["config"]["BLOCK"], item["config"]["WARPS"])
            assert key not in seen, f"{key} suggested twice"
            seen.add(key)
            latency = synthetic_latency("a100", *key)
            observations.append({"config": item["config"], "latency_ms": latency})
    assert len(seen) == 24  # the whole space, each configuration once
    last = filled.post("/v1/suggest", json=suggest_body(observations=observations)).json()
    assert last["suggestions"] == []
    assert any("untried" in warning for warning in last["warnings"])
    assert last["stage"] == "refine"  # feasible observations move the default stage on


def test_suggestions_stay_in_the_valid_list(filled: TestClient):
    valid = [{"BLOCK": b, "WARPS": w} for b, w in itertools.product(BLOCKS, WARPS) if b * w <= 512]
    body = filled.post(
        "/v1/suggest", json=suggest_body(space={"params": SPACE, "valid": valid}, k=20)
    ).json()
    configs = [item["config"] for item in body["suggestions"]]
    assert configs and all(config in valid for config in configs)
    assert {"BLOCK": 256, "WARPS": 4} not in configs  # the exemplar is outside the valid list
    assert len(configs) == min(20, len(valid))


def test_an_empty_memory_answers_with_search_and_says_so(client: TestClient):
    body = client.post("/v1/suggest", json=suggest_body(k=3, seed=7)).json()
    assert [item["source"] for item in body["suggestions"]] == ["search"] * 3
    assert all(item["lessons"] == [] for item in body["suggestions"])
    assert any("no configuration" in warning for warning in body["warnings"])
    again = client.post("/v1/suggest", json=suggest_body(k=3, seed=7)).json()
    assert [i["config"] for i in again["suggestions"]] == [i["config"] for i in body["suggestions"]]


def test_suggest_is_scoped_to_the_keys_tenant(service):
    with Session(service.engine) as session:
        a_key = create_key(session, "agent", "team-a", "a")[1]
        b_key = create_key(session, "agent", "team-b", "b")[1]
        reader = create_key(session, "reader", "team-a", "r")[1]
    team_a = {"Authorization": f"Bearer {a_key}"}
    with TestClient(create_app(service)) as client:
        runs = {"trajectories": [synthetic_run("a100")]}
        assert client.post("/v1/trajectories", json=runs, headers=team_a).status_code in (200, 201)
        mine = client.post("/v1/suggest", json=suggest_body(), headers=team_a).json()
        assert mine["suggestions"][0]["source"] == "exemplar"
        theirs = client.post(
            "/v1/suggest", json=suggest_body(), headers={"Authorization": f"Bearer {b_key}"}
        ).json()
        assert {item["source"] for item in theirs["suggestions"]} == {"search"}
        # A report from the other tenant cannot reach team-a's retrieval.
        report = {
            "retrieval_id": mine["retrieval_id"],
            "outcome": {"compiled": True, "correct": True},
        }
        crossed = client.post(
            "/v1/outcomes", json=report, headers={"Authorization": f"Bearer {b_key}"}
        )
        assert crossed.status_code == 404
        assert client.post("/v1/suggest", json=suggest_body()).status_code == 401
        denied = client.post(
            "/v1/suggest", json=suggest_body(), headers={"Authorization": f"Bearer {reader}"}
        )
        assert denied.status_code == 403


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"space": {"params": {}}}, "invalid_request"),
        ({"space": {"params": {"BLOCK": [64, 64]}}}, "invalid_request"),
        ({"space": {"params": {"BLOCK": [[64]]}}}, "invalid_request"),
        ({"space": {"params": SPACE, "valid": [{"BLOCK": 64}]}}, "invalid_request"),
        ({"space": {"params": SPACE, "valid": [{"BLOCK": 48, "WARPS": 1}]}}, "invalid_request"),
        ({"k": 0}, "invalid_request"),
        ({"k": 101}, "invalid_request"),
        ({"stage": "polish"}, "invalid_request"),
        ({"observations": [{"config": {"BLOCK": 64, "WARPS": 1}}]}, "invalid_request"),
        (
            {"observations": [{"config": {"BLOCK": 64, "WARPS": 1}, "latency_ms": -1.0}]},
            "invalid_request",
        ),
        (
            {"observations": [{"config": {"BLOCK": 48, "WARPS": 1}, "latency_ms": 1.0}]},
            "observation_outside_space",
        ),
        ({"context": {"chip": "no such gpu 9000"}}, "unknown_chip"),
        ({"surprise": 1}, "invalid_request"),
    ],
)
def test_bad_input_is_a_4xx_with_a_code_and_changes_nothing(
    filled: TestClient, service, change, code
):
    before = service.counts()
    response = filled.post("/v1/suggest", json=suggest_body(**change))
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["code"] == code
    assert service.counts() == before
    assert filled.post("/v1/suggest", json=suggest_body()).status_code == 200
    assert service.counts()["retrievals"] == before["retrievals"] + 1


def test_remote_service_suggests_as_the_embedded_one(service, serve):
    from tunemem.memory_service.core.errors import ServiceError
    from tunemem.memory_service.core.schemas.suggest import SuggestRequest
    from tunemem.memory_service.remote import RemoteService

    remote = RemoteService(serve(create_app(service)))
    try:
        request = SuggestRequest(**suggest_body(seed=3))
        local = service.suggest(request)
        over_http = remote.suggest(request)
        assert [s.config for s in over_http.suggestions] == [s.config for s in local.suggestions]
        assert over_http.retrieval_id != local.retrieval_id  # each call is its own retrieval
        bad = SuggestRequest(**suggest_body(context={"chip": "no such gpu 9000"}))
        with pytest.raises(ServiceError) as error:
            remote.suggest(bad)
        assert error.value.code == "unknown_chip" and error.value.status == 422
    finally:
        remote.close()
