"""A lesson retrieved on another backend comes back with its own words, a rendered text that
changes no claim, and a glossary from the target chip's descriptor (through HTTP)."""

from __future__ import annotations

TEXT = (
    "On a100 (cuda), each warp of 32 threads reads a 128-byte segment; stage the tile in shared "
    "memory and keep num_warps=4."
)


def _seed(client) -> str:  # type: ignore[no-untyped-def]
    lesson = {
        "kind": "insight",
        "text": TEXT,
        "applicability": {"op": "gemm", "chips": ["a100"], "backends": ["cuda"]},
    }
    return client.post("/v1/lessons", json={"lessons": [lesson]}).json()["ids"][0]


def _retrieve(client, chip: str) -> dict:  # type: ignore[no-untyped-def]
    body = {
        "query": "stage the gemm tile in shared memory",
        "task": {"op": "gemm"},
        "context": {"chip": chip},
        "stage": "draft",
    }
    response = client.post("/v1/retrieve", json=body)
    assert response.status_code == 200, response.text
    return response.json()["lessons"][0]


def test_transferred_lesson_has_rendered_text_and_glossary(client) -> None:  # type: ignore[no-untyped-def]
    lesson_id = _seed(client)
    on_mi300x = _retrieve(client, "mi300x")
    assert on_mi300x["id"] == lesson_id and on_mi300x["transferred"] is True
    assert on_mi300x["text"] == TEXT
    assert on_mi300x["rendered_text"] == TEXT.replace("shared memory", "LDS")
    glossary = {e["term"]: e for e in on_mi300x["glossary"]}
    assert (
        glossary["shared memory"]["counterpart"] == "LDS" and glossary["shared memory"]["rendered"]
    )
    assert "a100 has 164 KB of shared memory per SM" in glossary["shared memory"]["caveat"]
    assert glossary["warp"]["rendered"] is False
    assert glossary["warp"]["note"] == "a wavefront on mi300x is 64 lanes"
    assert "2x the threads per program" in glossary["num_warps"]["caveat"]
    # RDNA2 runs wave32: the width does not change, so no caveat on the warp.
    on_w6600 = {e["term"]: e for e in _retrieve(client, "w6600")["glossary"]}
    assert on_w6600["warp"]["caveat"] is None and "num_warps" not in on_w6600
    # On its own backend a lesson is not transferred and has no glossary.
    on_h200 = _retrieve(client, "h200")
    assert on_h200["transferred"] is False
    assert on_h200["rendered_text"] is None and on_h200["glossary"] == []
