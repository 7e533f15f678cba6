"""The retrieval query text and a lesson's source scope and transfer flag (pure functions)."""

from __future__ import annotations

from tunemem.retrieval.query import is_transferred, query_text, source_scope


def test_query_text_orders_fields_and_ends_with_the_stage():
    text = query_text(
        "  slow softmax ",
        stage="refine",
        op="softmax",
        signature={"N": 4096, "M": 8},
        dtype="bf16",
        chip="h200",
        backend="cuda",
    )
    assert text.split("\n") == [
        "slow softmax",
        "op: softmax",
        "signature: M=8, N=4096",
        "dtype: bf16",
        "chip: h200",
        "backend: cuda",
        "stage: refine",
    ]


def test_query_text_of_an_empty_request_is_the_stage_alone():
    assert query_text("   ", stage="draft", signature={}) == "stage: draft"


def test_source_scope_prefers_the_chip_then_the_backend():
    assert source_scope(["a100", "h100"], ["cuda"]) == "chip:a100"
    assert source_scope([], ["hip"]) == "backend:hip"
    assert source_scope([], []) is None


def test_transferred_only_when_the_target_backend_is_not_the_lessons():
    assert is_transferred("hip", ["cuda"])
    assert not is_transferred("cuda", ["cuda", "hip"])
    assert not is_transferred("hip", [])
    assert not is_transferred(None, ["cuda"])
