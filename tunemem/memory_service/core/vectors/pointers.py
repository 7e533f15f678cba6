"""The SQL pointer to each tenant's current vector-index collection (`IndexPointer` rows).

Every worker reads it (cached for `ttl` seconds, and re-read at once when the index reports a
collection gone), and a reindex switches it in one SQL transaction after the new collection
is complete: readers move from the old collection to the full new one, never to a half-built
one, and a worker that still holds the old one finds it gone, re-reads, and carries on.
"""

from __future__ import annotations

import threading
import time

from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import IndexPointer, utcnow


class IndexPointers:
    """Generation numbers of tenants' collections, read from and written to SQL."""

    def __init__(self, store: Store, ttl: float = 1.0) -> None:
        self.store = store
        self.ttl = ttl
        self._cache: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str) -> int:
        """The tenant's current generation (0 until the first reindex), cached briefly."""
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and time.monotonic() - cached[1] < self.ttl:
            return cached[0]
        return self.refresh(tenant)

    def refresh(self, tenant: str) -> int:
        """The tenant's generation as SQL has it now."""
        with self.store.session() as session:
            row = session.get(IndexPointer, tenant)
            generation = row.generation if row is not None else 0
        with self._lock:
            self._cache[tenant] = (generation, time.monotonic())
        return generation

    def switch(self, tenant: str, generation: int) -> None:
        """Point every reader of `tenant` at `generation` (one SQL transaction)."""
        with self.store.session() as session:
            row = session.get(IndexPointer, tenant) or IndexPointer(tenant=tenant)
            row.generation, row.updated_at = generation, utcnow()
            session.add(row)
            session.commit()
        with self._lock:
            self._cache[tenant] = (generation, time.monotonic())
