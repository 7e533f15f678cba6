"""Export and import of a whole tenant: lessons (with revisions' final state), trajectories
with their attempts, retrievals and the outcome log, as one JSON Lines bundle.

Values are not exported: they are a function of the outcome log, so an import rebuilds them
(the target tenant's only) and gets the same table. Importing the same bundle twice adds
nothing. An import is one validated transaction (`bundle_records`): every record is checked
with the API's models and every reference resolves inside the importing tenant or the bundle
before anything is written, so it never touches another tenant's rows, never stores what a
later read or rebuild would fail on, and a refused bundle (4xx naming its first bad line)
changes nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from tunemem.memory_service.core.bundles import validate as bundle_records
from tunemem.memory_service.core.embedding.factory import Embedder
from tunemem.memory_service.core.errors import Conflict, InvalidInput
from tunemem.memory_service.core.lessons.rows import (
    embedding_text,
    index_metadata,
    normalise_applicability,
    set_filter_columns,
)
from tunemem.memory_service.core.schemas.lessons import Applicability
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Attempt, Lesson, Outcome, Retrieval, Trajectory
from tunemem.memory_service.core.vectors.base import VectorIndex

BUNDLE_VERSION = 1
KINDS = ("lesson", "trajectory", "attempt", "retrieval", "outcome")


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")  # type: ignore[return-value]
    return path.open(mode, encoding="utf-8")


def _rows(session: Session, tenant: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for row in session.exec(select(Lesson).where(Lesson.tenant == tenant).order_by(col(Lesson.id))):
        yield "lesson", row.model_dump(mode="json")
    for traj in session.exec(
        select(Trajectory).where(Trajectory.tenant == tenant).order_by(col(Trajectory.id))
    ):
        yield "trajectory", traj.model_dump(mode="json")
        for attempt in session.exec(
            select(Attempt).where(Attempt.trajectory_id == traj.id).order_by(col(Attempt.index))
        ):
            yield "attempt", attempt.model_dump(mode="json", exclude={"id"})
    for retrieval in session.exec(
        select(Retrieval).where(Retrieval.tenant == tenant).order_by(col(Retrieval.created_at))
    ):
        yield "retrieval", retrieval.model_dump(mode="json")
    for outcome in session.exec(
        select(Outcome).where(Outcome.tenant == tenant).order_by(col(Outcome.id))
    ):
        yield "outcome", outcome.model_dump(mode="json", exclude={"id"})


def export_bundle(store: Store, path: Path, tenant: str) -> dict[str, int]:
    """Write the tenant's data to `path` (.jsonl or .jsonl.gz); returns counts per kind."""
    counts = dict.fromkeys(KINDS, 0)
    with store.session() as session, _open(path, "w") as fh:
        fh.write(json.dumps({"kind": "header", "version": BUNDLE_VERSION, "tenant": tenant}) + "\n")
        for kind, data in _rows(session, tenant):
            fh.write(json.dumps({"kind": kind, "data": data}) + "\n")
            counts[kind] += 1
    return counts


def _parse(path: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """Every record of a bundle as (line, kind, data); InvalidInput for anything that is not
    one. Messages name the line, never the file (a server's scratch path means nothing to its
    client; the CLI names the file it was given)."""
    items: list[tuple[int, str, dict[str, Any]]] = []
    header = False
    try:
        with _open(path, "r") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise InvalidInput(
                        f"bundle line {number}: not JSON ({exc})", code="invalid_bundle"
                    ) from exc
                if not isinstance(item, dict):
                    raise InvalidInput(
                        f"bundle line {number}: not a JSON object", code="invalid_bundle"
                    )
                if not header:
                    if item.get("kind") != "header" or item.get("version") != BUNDLE_VERSION:
                        raise InvalidInput(
                            f"bundle line {number}: not a tunemem bundle version "
                            f"{BUNDLE_VERSION} (the first line is its header)",
                            code="invalid_bundle",
                        )
                    header = True
                    continue
                if item.get("kind") not in KINDS or not isinstance(item.get("data"), dict):
                    raise InvalidInput(
                        f"bundle line {number}: unknown record (kind must be one of "
                        f"{', '.join(KINDS)}, with an object as data)",
                        code="invalid_bundle",
                    )
                items.append((number, item["kind"], item["data"]))
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise InvalidInput(f"bundle unreadable ({exc})", code="invalid_bundle") from exc
    if not header:
        raise InvalidInput("bundle empty: not a tunemem bundle", code="invalid_bundle")
    return items


def import_bundle(
    store: Store,
    index: VectorIndex,
    embedder: Embedder,
    rebuild_values: Callable[[Session, str], int],
    path: Path,
    tenant: str,
) -> dict[str, int]:
    """Load a bundle into `tenant` as one validated transaction, skipping what exists.

    Every record is checked (`bundle_records.check`) before anything is written; then the new
    rows, the tenant's rebuilt values and the index entries are written in one transaction, so
    a bundle is imported whole or not at all.

    Args:
        store: the SQL store written.
        index, embedder: the imported active lessons are embedded and indexed.
        rebuild_values: recomputes a tenant's values from its (now longer) outcome log, in the
            import's session.
        path: a bundle written by `export_bundle`.
        tenant: whom the imported rows belong to.
    """
    items = _parse(path)  # parse everything first: a bad bundle changes nothing
    added = dict.fromkeys(KINDS, 0)
    with store.write_lock, store.session() as session:
        checked = bundle_records.check(session, items, tenant)
        have_lessons = set(
            session.exec(
                select(Lesson.id).where(
                    Lesson.tenant == tenant,
                    col(Lesson.id).in_([d["id"] for _, k, d in checked.records if k == "lesson"]),
                )
            ).all()
        )
        have_trajectories = set(
            session.exec(select(Trajectory.id).where(Trajectory.tenant == tenant)).all()
        )
        have_retrievals = set(
            session.exec(select(Retrieval.id).where(Retrieval.tenant == tenant)).all()
        )
        have_keys = {
            o.idempotency_key: (o.retrieval_id, o.created_at)
            for o in session.exec(
                select(Outcome).where(
                    Outcome.tenant == tenant, col(Outcome.idempotency_key).is_not(None)
                )
            )
        }
        have_outcomes = {
            (o.retrieval_id, _utc(o.created_at))
            for o in session.exec(select(Outcome).where(Outcome.tenant == tenant))
        }
        new_lessons: list[Lesson] = []
        attempts: list[dict[str, Any]] = []
        fresh_trajectories: set[str] = set()
        for line, kind, data in checked.records:
            own = {**data, "tenant": tenant}
            if kind == "lesson" and data["id"] not in have_lessons:
                derived = ("op", "chips", "backends")  # set from the applicability below
                row = Lesson.model_validate({k: v for k, v in own.items() if k not in derived})
                row.applicability = normalise_applicability(Applicability(**data["applicability"]))
                set_filter_columns(row)
                session.add(row)
                have_lessons.add(row.id)
                new_lessons.append(row)
            elif kind == "trajectory" and data["id"] not in have_trajectories:
                session.add(Trajectory.model_validate(own))
                have_trajectories.add(data["id"])
                fresh_trajectories.add(data["id"])
            elif kind == "attempt" and data["trajectory_id"] in fresh_trajectories:
                attempts.append({k: v for k, v in data.items() if k not in ("id", "tenant")})
            elif kind == "retrieval" and data["id"] not in have_retrievals:
                session.add(Retrieval.model_validate(own))
                have_retrievals.add(data["id"])
            elif kind == "outcome":
                seen = (data["retrieval_id"], _utc(data["created_at"]))
                if seen in have_outcomes:
                    continue
                key = data["idempotency_key"]
                if key and key in have_keys:
                    raise Conflict(
                        f"bundle line {line}: outcome idempotency key {key!r} is already used "
                        "by another outcome of this tenant",
                        code="idempotency_key_reused",
                    )
                session.add(Outcome.model_validate({**own, "id": None}))
                have_outcomes.add(seen)
                if key:
                    have_keys[key] = seen
            else:
                continue
            added[kind] += 1
        session.flush()
        if attempts:
            session.execute(insert(Attempt), attempts)
            added["attempt"] = len(attempts)
        if any(added.values()):
            rebuild_values(session, tenant)
        active = [r for r in new_lessons if r.status == "active"]
        if active:
            vectors = embedder.embed_documents(
                [embedding_text(r.kind, r.text, r.applicability) for r in active]
            )
            index.upsert([r.id for r in active], vectors, [index_metadata(r) for r in active])
        session.commit()
    return added


def _utc(value: datetime) -> datetime:
    """A timestamp as aware UTC (SQLite hands stored ones back naive)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
