"""`ChromaIndex`: the vector index in Chroma, embedded (PersistentClient) or on a server.

One collection per tenant and generation; the current generation comes from `Generations`
(the SQL pointer in the service). `rebuild` fills the next generation, switches the pointer
and drops the old collection; a worker that finds its collection gone re-reads the pointer
and retries once, so another worker's reindex never leaves it failing.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tunemem.memory_service.core.vectors.base import (
    COLLECTION,
    Batch,
    Generations,
    LocalGenerations,
    VectorIndex,
)

_T = TypeVar("_T")


class ChromaIndex(VectorIndex):
    """Chroma collections with cosine distance; embedded (path) or client of a server (url).

    Entries are ids and vectors; the metadata given to `upsert` routes them by tenant."""

    STEP = 4000  # below Chroma's maximum batch size

    COUNT_TTL_S = 10.0

    def __init__(
        self,
        path: Path | None = None,
        url: str | None = None,
        collection: str = COLLECTION,
        generations: Generations | None = None,
    ):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=True)
        if url:
            from urllib.parse import urlparse

            parsed = urlparse(url)
            self._client = chromadb.HttpClient(
                host=parsed.hostname or "localhost",
                port=parsed.port or 8000,
                ssl=parsed.scheme == "https",
                settings=chroma_settings,
            )
        elif path is not None:
            path.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        else:
            raise ValueError("ChromaIndex needs a path (embedded) or a url (server)")
        self._name = collection
        self._generations: Generations = generations or LocalGenerations()
        self._collections: dict[str, Any] = {}
        # Entries per tenant, counted once and kept until this process writes (Chroma counts by
        # scanning, which cost a sixth of a retrieve at 100k lessons). A server is shared by
        # several workers, so there the count is also recounted after COUNT_TTL_S.
        self._counts: dict[str, tuple[int, float]] = {}
        self._count_ttl = self.COUNT_TTL_S if url else None

    # One collection per tenant (and generation): a query then needs no metadata filter,
    # which in Chroma would scan the metadata of every entry.
    def _collection_name(self, tenant: str, generation: int | None = None) -> str:
        base = self._name if tenant == "default" else self._tenant_name(tenant)
        gen = self._generations.get(tenant) if generation is None else generation
        return base if gen == 0 else f"{base}-g{gen}"

    def _tenant_name(self, tenant: str) -> str:
        return f"{self._name}-t{hashlib.sha1(tenant.encode()).hexdigest()[:12]}"

    def _collection(self, tenant: str) -> Any:
        name = self._collection_name(tenant)
        collection = self._collections.get(name)
        if collection is None:
            # Opening (or creating) a collection reads the pointer afresh: a cached generation
            # may name one another worker has switched from and dropped, which must not be
            # created again and written to.
            name = self._collection_name(tenant, self._generations.refresh(tenant))
            collection = self._collections.get(name)
        if collection is None:
            collection = self._client.get_or_create_collection(
                name=name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
            self._collections[name] = collection
        return collection

    @staticmethod
    def _gone(exc: Exception) -> bool:
        return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)

    def _on_current(self, tenant: str, action: Callable[[Any], _T]) -> _T:
        """`action` on the tenant's current collection; once more after re-reading the
        pointer if the collection turned out to be gone (switched and dropped elsewhere)."""
        try:
            return action(self._collection(tenant))
        except Exception as exc:
            if not self._gone(exc):
                raise
            self._collections.clear()
            self._generations.refresh(tenant)
            return action(self._collection(tenant))

    def _all_collections(self) -> list[Any]:
        found = []
        for item in self._client.list_collections():
            name = item if isinstance(item, str) else item.name
            if name == self._name or name.startswith(f"{self._name}-"):
                try:
                    found.append(self._client.get_collection(name, embedding_function=None))
                except Exception as exc:  # dropped between listing and opening
                    if not self._gone(exc):
                        raise
        return found

    def _write(self, collection: Any, ids: list[str], vectors: np.ndarray) -> None:
        # Entries carry no metadata: the tenant picks the collection, and every other filter
        # applies in SQL to the recalled candidates. Chroma writes each entry's metadata into
        # its own tables, which halved its insert rate (100k entries into its server in
        # batches of 5,000: 3,691 a second without, against 1,829 with four fields).
        for start in range(0, len(ids), self.STEP):
            part = slice(start, start + self.STEP)
            collection.upsert(ids=ids[part], embeddings=vectors[part].tolist())

    def upsert(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        by_tenant: dict[str, list[int]] = {}
        for i, meta in enumerate(metadatas):
            by_tenant.setdefault(meta["tenant"], []).append(i)
        for tenant, rows in by_tenant.items():
            part = ([ids[i] for i in rows], vectors[rows])

            def write(collection: Any, part: tuple[list[str], np.ndarray] = part) -> None:
                self._write(collection, *part)

            self._counts.pop(tenant, None)
            self._on_current(tenant, write)
            self._counts.pop(tenant, None)  # again: a count may have run during the upsert

    def delete(self, ids: list[str]) -> None:
        if ids:
            self._counts.clear()
            for collection in self._all_collections():
                try:
                    collection.delete(ids=ids)
                except Exception as exc:
                    if not self._gone(exc):
                        raise

    def query(self, vector: np.ndarray, n: int, tenant: str) -> list[tuple[str, float]]:
        if n <= 0:
            return []

        def search(collection: Any) -> list[tuple[str, float]]:
            # Chroma (1.x) answers n_results beyond the collection's size with what it has.
            result = collection.query(
                query_embeddings=[vector.tolist()], n_results=n, include=["distances"]
            )
            pairs = zip(result["ids"][0], result["distances"][0], strict=True)
            return [(i, 1.0 - float(d)) for i, d in pairs]

        return self._on_current(tenant, search)

    def query_many(self, vectors: np.ndarray, n: int, tenant: str) -> list[list[tuple[str, float]]]:
        if n <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        collection = self._collection(tenant)
        answers: list[list[tuple[str, float]]] = []
        for start in range(0, len(vectors), 1000):
            result = collection.query(
                query_embeddings=vectors[start : start + 1000].tolist(),
                n_results=n,
                include=["distances"],
            )
            for ids, distances in zip(result["ids"], result["distances"], strict=True):
                answers.append([(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)])
        return answers

    def count(self, tenant: str | None = None) -> int:
        if tenant is None:
            return sum(int(c.count()) for c in self._all_collections())
        cached = self._counts.get(tenant)
        now = time.monotonic()
        if cached is not None and (self._count_ttl is None or now - cached[1] < self._count_ttl):
            return cached[0]
        total = int(self._on_current(tenant, lambda c: c.count()))
        self._counts[tenant] = (total, now)
        return total

    def ids(self, tenant: str) -> set[str]:
        def listing(collection: Any) -> set[str]:
            found: set[str] = set()
            while True:
                page = collection.get(include=[], limit=self.STEP, offset=len(found))["ids"]
                found.update(page)
                if len(page) < self.STEP:
                    return found

        return self._on_current(tenant, listing)

    def rebuild(self, tenant: str, batches: Iterable[Batch]) -> int:
        old = self._generations.refresh(tenant)
        name = self._collection_name(tenant, old + 1)
        if any(c.name == name for c in self._all_collections()):
            self._client.delete_collection(name)  # left by a rebuild that did not finish
        fresh = self._client.create_collection(
            name=name, metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        written = 0
        for ids, vectors, _metadatas in batches:
            self._write(fresh, ids, vectors)
            written += len(ids)
        self._generations.switch(tenant, old + 1)
        self._collections[name] = fresh
        self._counts.pop(tenant, None)
        previous = self._collection_name(tenant, old)
        self._collections.pop(previous, None)
        try:
            self._client.delete_collection(previous)
        except Exception as exc:  # never created (no entries before) or dropped already
            if not self._gone(exc):
                raise
        return written

    def reset(self, tenant: str | None = None) -> None:
        if tenant is not None:
            name = self._collection_name(tenant)
            if any(c.name == name for c in self._all_collections()):
                self._client.delete_collection(name)
            self._collections.pop(name, None)
            self._counts.pop(tenant, None)
            return
        for collection in self._all_collections():
            self._client.delete_collection(collection.name)
        self._collections = {}
        self._counts.clear()
