"""The vector-index and embedder registries: every registered name builds its kind, a wrong
name is refused with the valid ones, and a Chroma server without an address is refused."""

from __future__ import annotations

import pytest

from tunemem.memory_service.core.embedding.factory import (
    EMBEDDERS,
    CachedEmbedder,
    HashingEmbedder,
    create_embedder,
)
from tunemem.memory_service.core.vectors.base import MemoryIndex
from tunemem.memory_service.core.vectors.factory import INDEX_KINDS, create_index


def test_every_local_index_kind_builds(tmp_path) -> None:
    assert INDEX_KINDS == ("chroma", "chroma-http", "memory")
    assert isinstance(create_index("memory"), MemoryIndex)
    assert type(create_index("chroma", path=tmp_path / "chroma")).__name__ == "ChromaIndex"


def test_index_registry_refuses_what_it_cannot_build() -> None:
    with pytest.raises(ValueError, match="valid kinds: chroma, chroma-http, memory"):
        create_index("faiss")
    with pytest.raises(ValueError, match="needs TUNEMEM_INDEX_URL"):
        create_index("chroma-http")


def test_embedder_registry_builds_by_name_and_refuses_a_wrong_one() -> None:
    assert EMBEDDERS == ("minilm", "minilm-torch", "hashing")
    hashing = create_embedder("hashing")
    assert isinstance(hashing, CachedEmbedder) and isinstance(hashing.inner, HashingEmbedder)
    with pytest.raises(ValueError, match="valid kinds: minilm, minilm-torch, hashing"):
        create_embedder("word2vec")
