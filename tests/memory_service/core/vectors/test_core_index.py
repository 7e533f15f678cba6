"""Vector index conformance: counts follow every write (ChromaIndex keeps its count between
writes), and a query asking for more entries than a tenant has returns what there is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tunemem.memory_service.core.vectors.base import MemoryIndex, VectorIndex
from tunemem.memory_service.core.vectors.chroma import ChromaIndex


@pytest.fixture(params=["memory", "chroma"])
def index(request, tmp_path: Path) -> VectorIndex:
    return MemoryIndex() if request.param == "memory" else ChromaIndex(path=tmp_path / "chroma")


def _unit(rows: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, 16)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_counts_follow_upserts_deletes_and_reset(index: VectorIndex) -> None:
    ids = [f"l{i}" for i in range(6)]
    meta = [{"tenant": "a"}] * 4 + [{"tenant": "b"}] * 2
    assert index.count("a") == 0
    index.upsert(ids, _unit(6, 0), meta)
    assert (index.count("a"), index.count("b"), index.count()) == (4, 2, 6)
    index.upsert(ids[:2], _unit(2, 1), meta[:2])  # replacing entries adds none
    assert index.count("a") == 4
    index.upsert(["l9"], _unit(1, 2), [{"tenant": "a"}])
    assert index.count("a") == 5
    index.delete(["l0", "l9", "unknown"])
    assert (index.count("a"), index.count("b")) == (3, 2)
    index.reset("b")
    index.reset("nobody")
    assert (index.count("a"), index.count("b")) == (3, 0)
    assert index.query(_unit(1, 3)[0], 5, "b") == []
    index.reset()
    assert (index.count("a"), index.count()) == (0, 0)


def test_query_beyond_the_tenants_size_returns_its_entries_most_similar_first(
    index: VectorIndex,
) -> None:
    vectors = _unit(3, 3)
    index.upsert(["x", "y", "z"], vectors, [{"tenant": "a"}] * 3)
    hits = index.query(vectors[1], 50, "a")
    assert [h[0] for h in hits][0] == "y" and sorted(h[0] for h in hits) == ["x", "y", "z"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.query(vectors[0], 5, "nobody") == []
    assert index.query(vectors[0], 0, "a") == []


def test_query_many_answers_like_one_query_per_vector(index: VectorIndex) -> None:
    vectors = _unit(30, 4)
    index.upsert([f"v{i}" for i in range(30)], vectors, [{"tenant": "a"}] * 30)
    probes = _unit(5, 5)
    many = index.query_many(probes, 4, "a")
    assert [[i for i, _ in hits] for hits in many] == [
        [i for i, _ in index.query(p, 4, "a")] for p in probes
    ]
    assert index.query_many(probes[:0], 4, "a") == []
    assert index.query_many(probes[:2], 4, "nobody") == [[], []]


def test_chroma_entries_are_ids_and_vectors_routed_by_tenant(tmp_path: Path) -> None:
    # Per-entry metadata halved Chroma's insert rate and no query reads it: entries hold
    # none, and the tenant in the given metadata still picks the collection.
    index = ChromaIndex(path=tmp_path / "chroma")
    vectors = _unit(3, 5)
    index.upsert(
        ["x0", "x1", "y0"],
        vectors,
        [{"tenant": "a", "kind": "insight", "op": "gemm", "backends": "cuda"}] * 2
        + [{"tenant": "b", "kind": "failure", "op": "softmax", "backends": "hip"}],
    )
    stored = index._collection("a").get(include=["metadatas", "embeddings"])
    assert sorted(stored["ids"]) == ["x0", "x1"]
    assert all(not meta for meta in stored["metadatas"])
    assert index.query(vectors[2], 5, "b")[0][0] == "y0"
    assert [i for i, _ in index.query(vectors[0], 5, "a")] == ["x0", "x1"]
