"""The vector-index registry: `create_index(kind)` builds one of `INDEX_KINDS` by name."""

from __future__ import annotations

from pathlib import Path

from tunemem.memory_service.core.vectors.base import (
    COLLECTION,
    Generations,
    MemoryIndex,
    VectorIndex,
)
from tunemem.memory_service.core.vectors.chroma import ChromaIndex

INDEX_KINDS = ("chroma", "chroma-http", "memory")


def create_index(
    kind: str,
    *,
    path: Path | None = None,
    url: str | None = None,
    collection: str = COLLECTION,
    generations: Generations | None = None,
) -> VectorIndex:
    """Build a vector index by name; `generations` is where Chroma's current collections are
    recorded (the SQL pointer in the service)."""
    if kind == "chroma":
        return ChromaIndex(path=path, collection=collection, generations=generations)
    if kind == "chroma-http":
        if not url:
            raise ValueError("index 'chroma-http' needs TUNEMEM_INDEX_URL")
        return ChromaIndex(url=url, collection=collection, generations=generations)
    if kind == "memory":
        return MemoryIndex()
    raise ValueError(f"unknown index {kind!r}; valid kinds: {', '.join(INDEX_KINDS)}")
