"""Vector index: a rebuildable cache of lesson embeddings (SQL stays the source of truth).

`ChromaIndex` (embedded PersistentClient, or Chroma's HTTP server) and `MemoryIndex` (numpy,
exact, in-process) implement `VectorIndex`; `memory_service.core.vectors.factory.create_index` picks
one by name.

`rebuild` builds a tenant's entries beside the current ones and switches readers over at once,
so a reindex is invisible to them. ChromaIndex names a tenant's collections by generation and
takes the current generation from `Generations` (the SQL pointer, `IndexPointers`, in the
service); a collection found gone (another worker switched and dropped it) makes it re-read
the pointer and retry once.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

import numpy as np

COLLECTION = "tunemem_lessons"
Batch = tuple[list[str], np.ndarray, list[dict[str, Any]]]
_T = TypeVar("_T")


class Generations(Protocol):
    """Where a tenant's current collection generation is kept."""

    def get(self, tenant: str) -> int: ...

    def refresh(self, tenant: str) -> int: ...

    def switch(self, tenant: str, generation: int) -> None: ...


class LocalGenerations:
    """Generations kept in this process only (one process, or tests)."""

    def __init__(self) -> None:
        self._current: dict[str, int] = {}

    def get(self, tenant: str) -> int:
        return self._current.get(tenant, 0)

    def refresh(self, tenant: str) -> int:
        return self.get(tenant)

    def switch(self, tenant: str, generation: int) -> None:
        self._current[tenant] = generation


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

    @abstractmethod
    def ids(self, tenant: str) -> set[str]:
        """The ids of a tenant's entries."""

    @abstractmethod
    def rebuild(self, tenant: str, batches: Iterable[Batch]) -> int:
        """Replace a tenant's entries with `batches`, switching readers at the end.

        Args:
            tenant: whose entries are rebuilt.
            batches: (ids, unit-norm vectors, metadatas) of every entry the tenant should have.

        Returns:
            The number of entries written.
        """


class MemoryIndex(VectorIndex):
    """Exact search in process memory; for tests and small embedded stores."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._tenant_codes: dict[str, int] = {}
        self._tenants = np.zeros(0, dtype=np.int32)
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.RLock()

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
        with self._lock:
            if tenant is not None:
                self.delete(list(self.ids(tenant)))
                return
            self._ids, self._pos, self._tenant_codes = [], {}, {}
            self._tenants = np.zeros(0, dtype=np.int32)
            self._vectors = np.zeros((0, 0), dtype=np.float32)

    def ids(self, tenant: str) -> set[str]:
        with self._lock:
            code = self._tenant_codes.get(tenant)
            return {i for i, c in zip(self._ids, self._tenants, strict=True) if c == code}

    def rebuild(self, tenant: str, batches: Iterable[Batch]) -> int:
        built = list(batches)  # embedded outside the lock: readers keep the old entries
        with self._lock:
            self.reset(tenant)
            for ids, vectors, metadatas in built:
                if ids:
                    self.upsert(ids, vectors, metadatas)
        return sum(len(ids) for ids, _, _ in built)
