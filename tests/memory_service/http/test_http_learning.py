"""Through HTTP: values move rankings, per scope and per stage; exploration; rebuild; reindex."""

from __future__ import annotations

QUERY = "tile the convolution input into shared memory to reuse loads"


def lesson(text: str, **app) -> dict:
    applicability = {"op": "convolution", "backends": ["cuda"], "chips": ["a100"], **app}
    return {"kind": "insight", "text": text, "applicability": applicability}


POOL = [
    lesson(
        "Tile the convolution input into shared memory so every load is reused by the block"
    ),  # A
    lesson("Unroll the filter loops of the convolution completely when the filter is small"),  # B
    lesson("Use 128 threads per block along x for the convolution kernel"),
    lesson("Let each thread compute several output pixels of the convolution in registers"),
    lesson("Read the filter weights from constant memory in the convolution kernel"),
]


def retrieve(client, chip: str, stage: str = "draft", k: int = 5) -> dict:
    # These tests are about the chain estimate (scope back-off); the generalised default is
    # tested in tests/memory_service/core/values/test_core_generalised.py.
    body = {
        "query": QUERY,
        "task": {"op": "convolution"},
        "context": {"chip": chip},
        "stage": stage,
        "k": k,
        "options": {"values": "chain", "value_floor": 0.0},
    }
    response = client.post("/v1/retrieve", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def report(client, retrieval: dict, used: list[str], good: bool, **extra) -> dict:
    outcome = {"compiled": True, "correct": good, **extra}
    response = client.post(
        "/v1/outcomes",
        json={"retrieval_id": retrieval["retrieval_id"], "used": used, "outcome": outcome},
    )
    assert response.status_code == 200, response.text
    return response.json()


def by_id(retrieval: dict) -> dict[str, dict]:
    return {item["id"]: item for item in retrieval["lessons"]}


def seeded(client) -> tuple[str, str]:
    ids = client.post("/v1/lessons", json={"lessons": POOL}).json()["ids"]
    return ids[0], ids[1]


def test_values_move_rankings_and_scopes(client):
    a, b = seeded(client)
    before = retrieve(client, "a100")
    order = [item["id"] for item in before["lessons"]]
    assert order.index(a) < order.index(b), "A is the more similar lesson and starts above B"
    assert by_id(before)[a]["breakdown"]["similarity"] > by_id(before)[b]["breakdown"]["similarity"]

    for _ in range(6):
        r = retrieve(client, "a100")
        report(client, r, [a], good=False)
        r = retrieve(client, "a100")
        report(client, r, [b], good=True)

    after = retrieve(client, "a100")
    order = [item["id"] for item in after["lessons"]]
    assert order.index(b) < order.index(a), "after the outcomes B ranks above A on the chip"
    assert by_id(after)[a]["breakdown"]["value_scope"] == "chip:a100"

    # The same outcomes move values less the further the context is from chip:a100.
    gaps = {}
    scopes = {}
    for chip in ("a100", "a4000", "h200", "mi250x"):
        got = by_id(retrieve(client, chip))
        gaps[chip] = got[b]["breakdown"]["value"] - got[a]["breakdown"]["value"]
        scopes[chip] = got[b]["breakdown"]["value_scope"]
    assert gaps["a100"] > gaps["a4000"] > gaps["h200"] > gaps["mi250x"] > 0
    assert scopes == {
        "a100": "chip:a100",
        "a4000": "family:nvidia-ampere",
        "h200": "backend:cuda",
        "mi250x": "global",
    }
    mi = by_id(retrieve(client, "mi250x"))
    assert mi[a]["transferred"] is True and mi[a]["rendered_text"] is not None
    assert "LDS" in mi[a]["rendered_text"]


def test_draft_and_refine_values_are_separate(client):
    a, _ = seeded(client)
    for _ in range(3):
        report(client, retrieve(client, "a100", "draft"), [a], good=True)
    refine = by_id(retrieve(client, "a100", "refine"))[a]["breakdown"]
    assert refine["n"] == 0 and refine["value"] == 0.0
    for _ in range(3):
        report(
            client,
            retrieve(client, "a100", "refine"),
            [a],
            good=True,
            latency_ms=1.0,
            best_before_ms=2.0,
        )
    values = client.get(f"/v1/lessons/{a}").json()["values"]
    draft_chip = [v for v in values if v["stage"] == "draft" and v["scope"] == "chip:a100"][0]
    refine_chip = [v for v in values if v["stage"] == "refine" and v["scope"] == "chip:a100"][0]
    assert draft_chip["n"] == 3 and refine_chip["n"] == 3
    # Refine outcomes left the draft value where three +1 rewards put it: 1 - 0.7**3.
    assert abs(draft_chip["q"] - (1 - 0.7**3)) < 1e-9


def test_exploration_bonus_for_untried_lesson_shrinks(client):
    a, b = seeded(client)
    for _ in range(4):
        report(client, retrieve(client, "a100"), [a], good=True)
    bonus = []
    for _ in range(4):
        r = retrieve(client, "a100")
        bonus.append(by_id(r)[b]["breakdown"]["exploration"])
        report(client, r, [b], good=True)
    assert bonus[0] > 0
    assert bonus == sorted(bonus, reverse=True) and bonus[-1] < bonus[0]
    assert by_id(retrieve(client, "a100"))[a]["breakdown"]["exploration"] < bonus[0]


def test_values_rebuild_reproduces_the_table(client, service):
    a, b = seeded(client)
    for i in range(5):
        report(client, retrieve(client, "a100"), [a, b], good=i % 2 == 0)
        report(
            client,
            retrieve(client, "mi250x", "refine"),
            None or [a],
            good=True,
            latency_ms=1.0 + i,
            best_before_ms=2.0,
        )
    table = service.value_table()
    assert len(table) > 8
    assert client.post("/v1/admin/values/rebuild").json() == {"outcomes_replayed": 10}
    assert service.value_table() == table


def test_reindex_keeps_the_ranking(client, service):
    seeded(client)
    before = retrieve(client, "a100")
    assert service.reindex() == len(POOL)
    after = retrieve(client, "a100")
    assert [i["id"] for i in after["lessons"]] == [i["id"] for i in before["lessons"]]


def test_history_traces_values_to_outcomes(client):
    a, b = seeded(client)
    report(client, retrieve(client, "a100"), [a], good=False)
    report(client, retrieve(client, "a100"), [b], good=True)
    history = client.get(f"/v1/lessons/{a}/history").json()
    assert [o["reward"] for o in history["outcomes"]] == [-1.0]
    assert {v["scope"] for v in history["values"]} == {
        "chip:a100",
        "family:nvidia-ampere",
        "backend:cuda",
        "global",
    }
