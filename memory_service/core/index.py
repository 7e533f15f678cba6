"""Vector index: a rebuildable cache of lesson embeddings (SQL stays the source of truth).

`ChromaIndex` (embedded PersistentClient, or Chroma's HTTP server) and `MemoryIndex` (numpy,
exact, in-process) implement `VectorIndex`; `create_index` picks one by name.
"""

from __future__ import annotations

import hashlib
import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

COLLECTION = "tunemem_lessons"


class VectorIndex(ABC):
    """Cosine-similarity search over lesson embeddings, filtered by tenant."""

    @abstractmethod
    def upsert(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        """Insert or replace entries.

        Args:
            ids: lesson ids.
            vectors: unit-norm rows, one per id.
            metadatas: scalar metadata per id; must include "tenant".
        """

    @abstractmethod
    def delete(self, ids: list[str]) -> None:
        """Remove entries; unknown ids are ignored."""

    @abstractmethod
    def query(self, vector: np.ndarray, n: int, tenant: str) -> list[tuple[str, float]]:
        """Nearest entries of one tenant.

        Args:
            vector: unit-norm query vector.
            n: how many to return at most.
            tenant: only entries with this tenant.

        Returns:
            (id, cosine similarity), most similar first.
        """

    def query_many(self, vectors: np.ndarray, n: int, tenant: str) -> list[list[tuple[str, float]]]:
        """`query` for each row of `vectors`, in order (an index may answer them in one call)."""
        return [self.query(vector, n, tenant) for vector in vectors]

    @abstractmethod
    def count(self, tenant: str | None = None) -> int:
        """Number of entries (of one tenant, when given)."""

    @abstractmethod
    def reset(self, tenant: str | None = None) -> None:
        """Drop every entry (of one tenant, when given)."""


class MemoryIndex(VectorIndex):
    """Exact search in process memory; for tests and small embedded stores."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._tenant_codes: dict[str, int] = {}
        self._tenants = np.zeros(0, dtype=np.int32)
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()

    def _code(self, tenant: str) -> int:
        return self._tenant_codes.setdefault(tenant, len(self._tenant_codes))

    def upsert(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        with self._lock:
            if self._vectors.size == 0:
                self._vectors = np.zeros((0, vectors.shape[1]), dtype=np.float32)
            new_rows: list[int] = []
            new_codes: list[int] = []
            for i, lesson_id in enumerate(ids):
                code = self._code(metadatas[i]["tenant"])
                if lesson_id in self._pos:
                    self._vectors[self._pos[lesson_id]] = vectors[i]
                    self._tenants[self._pos[lesson_id]] = code
                else:
                    self._pos[lesson_id] = len(self._ids) + len(new_rows)
                    new_rows.append(i)
                    new_codes.append(code)
            for i in new_rows:
                self._ids.append(ids[i])
            if new_rows:
                self._vectors = np.vstack([self._vectors, vectors[new_rows]])
                self._tenants = np.concatenate([self._tenants, np.array(new_codes, dtype=np.int32)])

    def delete(self, ids: list[str]) -> None:
        with self._lock:
            drop = {self._pos[i] for i in ids if i in self._pos}
            if not drop:
                return
            keep = [p for p in range(len(self._ids)) if p not in drop]
            self._ids = [self._ids[p] for p in keep]
            self._tenants = self._tenants[keep]
            self._vectors = self._vectors[keep]
            self._pos = {lesson_id: p for p, lesson_id in enumerate(self._ids)}

    def query(self, vector: np.ndarray, n: int, tenant: str) -> list[tuple[str, float]]:
        with self._lock:
            code = self._tenant_codes.get(tenant)
            if not self._ids or code is None:
                return []
            sims = self._vectors @ vector.astype(np.float32)
            mask = self._tenants == code
            sims = np.where(mask, sims, -np.inf)
            n = min(n, int(mask.sum()))
            if n <= 0:
                return []
            top = np.argpartition(-sims, n - 1)[:n]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(self._ids[p], float(sims[p])) for p in top]

    def count(self, tenant: str | None = None) -> int:
        if tenant is None:
            return len(self._ids)
        code = self._tenant_codes.get(tenant)
        return 0 if code is None else int((self._tenants == code).sum())

    def reset(self, tenant: str | None = None) -> None:
        if tenant is not None:
            code = self._tenant_codes.get(tenant)
            if code is not None:
                self.delete([i for i, c in zip(self._ids, self._tenants, strict=True) if c == code])
            return
        with self._lock:
            self._ids, self._pos, self._tenant_codes = [], {}, {}
            self._tenants = np.zeros(0, dtype=np.int32)
            self._vectors = np.zeros((0, 0), dtype=np.float32)


class ChromaIndex(VectorIndex):
    """Chroma collection with cosine distance; embedded (path) or client of a server (url)."""

    COUNT_TTL_S = 10.0

    def __init__(
        self, path: Path | None = None, url: str | None = None, collection: str = COLLECTION
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
        self._collections: dict[str, Any] = {}
        # Entries per tenant, counted once and kept until this process writes (Chroma counts by
        # scanning, which cost a sixth of a retrieve at 100k lessons). A server is shared by
        # several workers, so there the count is also recounted after COUNT_TTL_S.
        self._counts: dict[str, tuple[int, float]] = {}
        self._count_ttl = self.COUNT_TTL_S if url else None

    # One collection per tenant: a query then needs no metadata filter, which in Chroma
    # would scan the metadata of every entry.
    def _collection_name(self, tenant: str) -> str:
        if tenant == "default":
            return self._name
        return f"{self._name}-t{hashlib.sha1(tenant.encode()).hexdigest()[:12]}"

    def _collection(self, tenant: str) -> Any:
        collection = self._collections.get(tenant)
        if collection is None:
            collection = self._client.get_or_create_collection(
                name=self._collection_name(tenant),
                metadata={"hnsw:space": "cosine"},
                embedding_function=None,
            )
            self._collections[tenant] = collection
        return collection

    def _all_collections(self) -> list[Any]:
        names = []
        for item in self._client.list_collections():
            name = item if isinstance(item, str) else item.name
            if name == self._name or name.startswith(f"{self._name}-t"):
                names.append(name)
        return [self._client.get_collection(name, embedding_function=None) for name in names]

    def upsert(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        by_tenant: dict[str, list[int]] = {}
        for i, meta in enumerate(metadatas):
            by_tenant.setdefault(meta["tenant"], []).append(i)
        step = 4000  # below Chroma's maximum batch size
        for tenant, rows in by_tenant.items():
            self._counts.pop(tenant, None)
            collection = self._collection(tenant)
            for start in range(0, len(rows), step):
                part = rows[start : start + step]
                collection.upsert(
                    ids=[ids[i] for i in part],
                    embeddings=vectors[part].tolist(),
                    metadatas=[metadatas[i] for i in part],
                )
            self._counts.pop(tenant, None)  # again: a count may have run during the upsert

    def delete(self, ids: list[str]) -> None:
        if ids:
            self._counts.clear()
            for collection in self._all_collections():
                collection.delete(ids=ids)

    def query(self, vector: np.ndarray, n: int, tenant: str) -> list[tuple[str, float]]:
        if n <= 0:
            return []
        # Chroma (1.x) answers n_results beyond the collection's size with what it has.
        result = self._collection(tenant).query(
            query_embeddings=[vector.tolist()], n_results=n, include=["distances"]
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

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
        total = int(self._collection(tenant).count())
        self._counts[tenant] = (total, now)
        return total

    def reset(self, tenant: str | None = None) -> None:
        if tenant is not None:
            name = self._collection_name(tenant)
            if any(c.name == name for c in self._all_collections()):
                self._client.delete_collection(name)
            self._collections.pop(tenant, None)
            self._counts.pop(tenant, None)
            return
        for collection in self._all_collections():
            self._client.delete_collection(collection.name)
        self._collections = {}
        self._counts.clear()


INDEX_KINDS = ("chroma", "chroma-http", "memory")


def create_index(
    kind: str, *, path: Path | None = None, url: str | None = None, collection: str = COLLECTION
) -> VectorIndex:
    """Build a vector index by name."""
    if kind == "chroma":
        return ChromaIndex(path=path, collection=collection)
    if kind == "chroma-http":
        if not url:
            raise ValueError("index 'chroma-http' needs TUNEMEM_INDEX_URL")
        return ChromaIndex(url=url, collection=collection)
    if kind == "memory":
        return MemoryIndex()
    raise ValueError(f"unknown index {kind!r}; valid kinds: {', '.join(INDEX_KINDS)}")
