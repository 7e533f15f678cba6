"""Keeping the vector index a faithful cache of SQL: rebuild it (reindex) and repair it.

SQL is written first and the index after the commit, so a crash between the two can only
leave an active lesson missing from the index (or an archived one still in it), never an
index entry for a lesson SQL does not have. `repair` finds and fixes exactly those
differences, by id, tenant by tenant; the server runs it on start, and `/healthz` shows both
counts so a drift is seen.

`rebuild` builds each tenant's entries beside the current ones (`VectorIndex.rebuild`) and
switches readers at the end; writes other workers made meanwhile (to the old collection) are
caught up from SQL after the switch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

from sqlalchemy import func
from sqlmodel import col, select

from tunemem.memory_service.core.embedding.factory import Embedder
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, utcnow
from tunemem.memory_service.core.vectors.base import Batch, VectorIndex

ProgressFn = Callable[[int, int], None]
# Writes stamped this long before a rebuild began are caught up too (clocks of workers differ).
CLOCK_MARGIN = timedelta(seconds=30)


def tenants_of(store: Store, tenant: str | None) -> list[str]:
    """`[tenant]`, or every tenant that has lessons."""
    if tenant is not None:
        return [tenant]
    with store.session() as session:
        return sorted(session.exec(select(Lesson.tenant).distinct()).all())


def _embedded(embedder: Embedder, rows: list[Lesson]) -> Batch:
    vectors = embedder.embed_documents(
        [lesson_rows.embedding_text(r.kind, r.text, r.applicability) for r in rows]
    )
    return [r.id for r in rows], vectors, [lesson_rows.index_metadata(r) for r in rows]


def _active_batches(
    store: Store, embedder: Embedder, tenant: str, size: int, progress: Callable[[int], None]
) -> Iterator[Batch]:
    last = ""
    while True:
        with store.session() as session:
            rows = list(
                session.exec(
                    select(Lesson)
                    .where(
                        Lesson.tenant == tenant, Lesson.status == "active", col(Lesson.id) > last
                    )
                    .order_by(col(Lesson.id))
                    .limit(size)
                )
            )
        if not rows:
            return
        last = rows[-1].id
        yield _embedded(embedder, rows)
        progress(len(rows))


def rebuild(
    store: Store,
    index: VectorIndex,
    embedder: Embedder,
    tenant: str | None = None,
    batch_size: int = 512,
    progress: ProgressFn | None = None,
) -> int:
    """Rebuild the index of one tenant (or every tenant) from SQL, invisibly to readers."""
    tenants = tenants_of(store, tenant)
    with store.session() as session:
        where = [Lesson.status == "active"]
        if tenant is not None:
            where.append(Lesson.tenant == tenant)
        total = int(session.exec(select(func.count()).select_from(Lesson).where(*where)).one())
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    for name in tenants:
        began = utcnow() - CLOCK_MARGIN
        index.rebuild(name, _active_batches(store, embedder, name, batch_size, tick))
        _catch_up(store, index, embedder, name, began)
    return done


def _catch_up(store: Store, index: VectorIndex, embedder: Embedder, tenant: str, since) -> None:
    """Re-apply to the (new) index every lesson of `tenant` changed since `since`."""
    with store.session() as session:
        rows = list(
            session.exec(
                select(Lesson).where(Lesson.tenant == tenant, col(Lesson.updated_at) >= since)
            )
        )
    active = [r for r in rows if r.status == "active"]
    if active:
        index.upsert(*_embedded(embedder, active))
    archived = [r.id for r in rows if r.status != "active"]
    if archived:
        index.delete(archived)


def repair(
    store: Store, index: VectorIndex, embedder: Embedder, tenant: str | None = None
) -> dict[str, int]:
    """Make the index hold exactly the active lessons of SQL; returns what was fixed."""
    added = removed = 0
    for name in tenants_of(store, tenant):
        with store.session() as session:
            active = set(
                session.exec(
                    select(Lesson.id).where(Lesson.tenant == name, Lesson.status == "active")
                ).all()
            )
        present = index.ids(name)
        missing = sorted(active - present)
        for start in range(0, len(missing), 512):
            with store.session() as session:
                rows = list(
                    session.exec(
                        select(Lesson).where(col(Lesson.id).in_(missing[start : start + 512]))
                    )
                )
            index.upsert(*_embedded(embedder, rows))
        extra = sorted(present - active)
        index.delete(extra)
        added, removed = added + len(missing), removed + len(extra)
    return {"added": added, "removed": removed}
