"""The vector-index registry: `create_index(kind)` builds one of `INDEX_KINDS` by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tunemem.memory_service.core.vectors.base import (
    COLLECTION,
    Generations,
    MemoryIndex,
    VectorIndex,
)

IndexBuilder = Callable[[Path | None, str | None, str, Generations | None], VectorIndex]


def _chroma(
    path: Path | None, url: str | None, collection: str, generations: Generations | None
) -> VectorIndex:
    from tunemem.memory_service.core.vectors.chroma import ChromaIndex  # chromadb is heavy

    return ChromaIndex(path=path, collection=collection, generations=generations)


def _chroma_http(
    path: Path | None, url: str | None, collection: str, generations: Generations | None
) -> VectorIndex:
    if not url:
        raise ValueError("index 'chroma-http' needs TUNEMEM_INDEX_URL")
    from tunemem.memory_service.core.vectors.chroma import ChromaIndex

    return ChromaIndex(url=url, collection=collection, generations=generations)


def _memory(
    path: Path | None, url: str | None, collection: str, generations: Generations | None
) -> VectorIndex:
    return MemoryIndex()


# name -> builder of (path, url, collection, generations); Chroma is imported when first built
INDEXES: dict[str, IndexBuilder] = {
    "chroma": _chroma,
    "chroma-http": _chroma_http,
    "memory": _memory,
}
INDEX_KINDS = tuple(INDEXES)


def create_index(
    kind: str,
    *,
    path: Path | None = None,
    url: str | None = None,
    collection: str = COLLECTION,
    generations: Generations | None = None,
) -> VectorIndex:
    """Build a vector index by name; `generations` is where Chroma's current collections are
    recorded (the SQL pointer in the service). An unknown name raises ValueError naming the
    valid ones."""
    if kind not in INDEXES:
        raise ValueError(f"unknown index {kind!r}; valid kinds: {', '.join(INDEX_KINDS)}")
    return INDEXES[kind](path, url, collection, generations)
