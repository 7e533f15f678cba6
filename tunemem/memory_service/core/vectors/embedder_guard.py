"""Which embedder made a store's vectors, and the index guard that holds a service to it.

Vectors of two models are not comparable (even one model on two runtimes differs in the last
bits), so the SQL store records the fingerprint of the embedder that made the vectors of its
index (`VectorModel` rows): one for the whole store (tenant `*`), recorded when a service
first opens a store whose index is empty and by a reindex of every tenant, and one per tenant
reindexed on its own. `ModelCheckedIndex` wraps the service's vector index: before vectors
are queried or written it compares the service's embedder with the record, and refuses
(`ReindexRequired`, 409 `reindex_required`) on a difference, or when the store has vectors
and no record (a store made before records were kept). A reindex replaces the vectors and
records its model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import col, delete

from tunemem.memory_service.core.errors import ReindexRequired
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import VectorModel, utcnow
from tunemem.memory_service.core.vectors.base import Batch, VectorIndex

EVERY_TENANT = "*"


class VectorModels:
    """The recorded model of each tenant's vectors (its own row, else the store's), read from
    SQL and cached for `ttl` seconds (another process may reindex)."""

    def __init__(self, store: Store, ttl: float = 1.0) -> None:
        self.store = store
        self.ttl = ttl
        self._cache: dict[str, tuple[str | None, float]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str) -> str | None:
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and time.monotonic() - cached[1] < self.ttl:
            return cached[0]
        with self.store.session() as session:
            row = session.get(VectorModel, tenant) or session.get(VectorModel, EVERY_TENANT)
            model = row.model if row is not None else None
        with self._lock:
            self._cache[tenant] = (model, time.monotonic())
        return model

    def any_recorded(self) -> bool:
        with self.store.session() as session:
            return session.exec(VectorModel.__table__.select().limit(1)).first() is not None  # type: ignore[attr-defined]

    def record(self, tenant: str | None, model: str) -> None:
        """Record `model` for `tenant`'s vectors, or (None) for the whole store's."""
        with self.store.session() as session:
            if tenant is None:
                session.exec(delete(VectorModel).where(col(VectorModel.tenant) != EVERY_TENANT))  # type: ignore[call-overload]
            key = tenant or EVERY_TENANT
            row = session.get(VectorModel, key) or VectorModel(tenant=key, model=model)
            row.model, row.updated_at = model, utcnow()
            session.add(row)
            try:
                session.commit()
            except IntegrityError:  # another worker recorded it first; re-read below
                session.rollback()
        with self._lock:
            self._cache.clear()


class ModelCheckedIndex(VectorIndex):
    """A vector index that only compares and writes vectors of the model that made the
    store's vectors (see the module docstring); everything else passes through."""

    def __init__(self, inner: VectorIndex, models: VectorModels, fingerprint: str) -> None:
        self.inner = inner
        self.models = models
        self.fingerprint = fingerprint
        try:
            if not models.any_recorded() and inner.count() == 0:
                models.record(None, fingerprint)  # a new store: its vectors will be this model's
        except (OperationalError, ProgrammingError):
            # Not migrated yet (TUNEMEM_MIGRATE_ON_START off): nothing is recorded, so vectors
            # are refused until `tunemem reindex` records the model of the ones it makes.
            pass

    def check(self, tenant: str) -> None:
        """Raise `ReindexRequired` unless `tenant`'s vectors are this embedder's."""
        recorded = self.models.get(tenant)
        if recorded == self.fingerprint:
            return
        made_by = f"embedder {recorded!r}" if recorded else "an embedder this store did not record"
        raise ReindexRequired(
            f"the vectors of tenant {tenant!r} were made by {made_by}, and this service embeds "
            f"with {self.fingerprint!r}; vectors of two models are not comparable: run "
            "`tunemem reindex` with this service's embedder first"
        )

    def record_every_tenant(self) -> None:
        """After a reindex of every tenant: the whole store's vectors are this model's."""
        self.models.record(None, self.fingerprint)

    def upsert(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        for tenant in sorted({str(m["tenant"]) for m in metadatas}):
            self.check(tenant)
        self.inner.upsert(ids, vectors, metadatas)

    def delete(self, ids: list[str]) -> None:
        self.inner.delete(ids)

    def query(self, vector: np.ndarray, n: int, tenant: str) -> list[tuple[str, float]]:
        self.check(tenant)
        return self.inner.query(vector, n, tenant)

    def query_many(self, vectors: np.ndarray, n: int, tenant: str) -> list[list[tuple[str, float]]]:
        self.check(tenant)
        return self.inner.query_many(vectors, n, tenant)

    def count(self, tenant: str | None = None) -> int:
        return self.inner.count(tenant)

    def reset(self, tenant: str | None = None) -> None:
        self.inner.reset(tenant)

    def ids(self, tenant: str) -> set[str]:
        return self.inner.ids(tenant)

    def rebuild(self, tenant: str, batches: Iterable[Batch]) -> int:
        written = self.inner.rebuild(tenant, batches)
        self.models.record(tenant, self.fingerprint)
        return written
