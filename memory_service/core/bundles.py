"""Export and import of a whole tenant: lessons (with revisions' final state), trajectories
with their attempts, retrievals and the outcome log, as one JSON Lines bundle.

Values are not exported: they are a function of the outcome log, so an import rebuilds them
(the target tenant's only) and gets the same table. Importing the same bundle twice adds
nothing. An import never touches another tenant's rows: a bundle whose lessons, runs or
retrievals exist under another tenant of the store, or whose outcome keys are taken by other
outcomes of the target tenant, is refused whole (409) and changes nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from memory_service.core.embedder import Embedder
from memory_service.core.errors import Conflict, InvalidInput
from memory_service.core.index import VectorIndex
from memory_service.core.lesson_rows import embedding_text, index_metadata
from memory_service.core.schema import Attempt, Lesson, Outcome, Retrieval, Trajectory
from memory_service.core.store import Store

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


def _parse(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every record of a bundle; InvalidInput for anything that is not one (a bad bundle
    changes nothing: it is parsed whole before anything is written)."""
    items: list[tuple[str, dict[str, Any]]] = []
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
                        f"{path}:{number}: not JSON ({exc})", code="invalid_bundle"
                    ) from exc
                if not isinstance(item, dict):
                    raise InvalidInput(f"{path}:{number}: not a JSON object", code="invalid_bundle")
                if not header:
                    if item.get("kind") != "header" or item.get("version") != BUNDLE_VERSION:
                        raise InvalidInput(
                            f"{path}: not a tunemem bundle version {BUNDLE_VERSION}",
                            code="invalid_bundle",
                        )
                    header = True
                    continue
                if item.get("kind") not in KINDS or not isinstance(item.get("data"), dict):
                    raise InvalidInput(f"{path}:{number}: unknown record", code="invalid_bundle")
                items.append((item["kind"], item["data"]))
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise InvalidInput(f"{path}: unreadable ({exc})", code="invalid_bundle") from exc
    if not header:
        raise InvalidInput(f"{path}: empty, not a tunemem bundle", code="invalid_bundle")
    return items


def import_bundle(
    store: Store,
    index: VectorIndex,
    embedder: Embedder,
    rebuild_values: Callable[[str], int],
    path: Path,
    tenant: str,
) -> dict[str, int]:
    """Load a bundle into `tenant` in one transaction, skipping what exists; rebuild values.

    Args:
        store: the SQL store written.
        index, embedder: the imported active lessons are embedded and indexed.
        rebuild_values: recomputes a tenant's values from its (now longer) outcome log.
        path: a bundle written by `export_bundle`.
        tenant: whom the imported rows belong to.
    """
    items = _parse(path)  # parse everything first: a bad bundle changes nothing
    added = dict.fromkeys(KINDS, 0)
    with store.write_lock, store.session() as session:
        owners = _owners(session, items)
        foreign = sorted({t for t in owners.values() if t != tenant})
        if foreign:
            raise Conflict(
                f"{path}: {sum(t != tenant for t in owners.values())} lessons, runs or "
                f"retrievals of this bundle belong to another tenant of this store; import it "
                "into the tenant it came from, or into another store",
                code="bundle_of_another_tenant",
            )
        have_lessons = set(session.exec(select(Lesson.id).where(Lesson.tenant == tenant)).all())
        have_trajectories = set(
            session.exec(select(Trajectory.id).where(Trajectory.tenant == tenant)).all()
        )
        have_retrievals = set(
            session.exec(select(Retrieval.id).where(Retrieval.tenant == tenant)).all()
        )
        have_keys = {
            o.idempotency_key: (o.retrieval_id, str(o.created_at))
            for o in session.exec(
                select(Outcome).where(
                    Outcome.tenant == tenant, col(Outcome.idempotency_key).is_not(None)
                )
            )
        }
        have_outcomes = {
            (o.retrieval_id, str(o.created_at))
            for o in session.exec(select(Outcome).where(Outcome.tenant == tenant))
        }
        new_lessons: list[Lesson] = []
        attempts: list[dict[str, Any]] = []
        fresh_trajectories: set[str] = set()
        try:
            for kind, data in items:
                data = {**data, "tenant": tenant} if kind != "attempt" else data
                if kind == "lesson" and data["id"] not in have_lessons:
                    row = Lesson.model_validate(data)
                    session.add(row)
                    have_lessons.add(row.id)
                    new_lessons.append(row)
                elif kind == "trajectory" and data["id"] not in have_trajectories:
                    session.add(Trajectory.model_validate(data))
                    have_trajectories.add(data["id"])
                    fresh_trajectories.add(data["id"])
                elif kind == "attempt" and data["trajectory_id"] in fresh_trajectories:
                    attempts.append(Attempt.model_validate(data).model_dump(exclude={"id"}))
                elif kind == "retrieval" and data["id"] not in have_retrievals:
                    session.add(Retrieval.model_validate(data))
                    have_retrievals.add(data["id"])
                elif kind == "outcome":
                    outcome = Outcome.model_validate(data)
                    key = outcome.idempotency_key
                    seen = (outcome.retrieval_id, str(outcome.created_at))
                    if seen in have_outcomes:
                        continue
                    if key and key in have_keys:
                        raise Conflict(
                            f"{path}: outcome idempotency key {key!r} is already used by "
                            "another outcome of this tenant",
                            code="idempotency_key_reused",
                        )
                    session.add(outcome)
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
            active = [r for r in new_lessons if r.status == "active"]
            if active:
                vectors = embedder.embed_documents(
                    [embedding_text(r.kind, r.text, r.applicability) for r in active]
                )
                index.upsert([r.id for r in active], vectors, [index_metadata(r) for r in active])
            session.commit()
        except Conflict:
            session.rollback()
            raise
        except (ValueError, KeyError, TypeError) as exc:
            session.rollback()
            raise InvalidInput(f"{path}: {exc}", code="invalid_bundle") from exc
    rebuild_values(tenant)
    return added


def _owners(session: Session, items: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Tenant of every stored lesson, run and retrieval whose id the bundle holds."""
    wanted: dict[str, set[str]] = {"lesson": set(), "trajectory": set(), "retrieval": set()}
    for kind, data in items:
        if kind in wanted and isinstance(data.get("id"), str):
            wanted[kind].add(data["id"])
    owners: dict[str, str] = {}
    for kind, table in (("lesson", Lesson), ("trajectory", Trajectory), ("retrieval", Retrieval)):
        ids = list(wanted[kind])
        for start in range(0, len(ids), 500):
            rows = session.exec(
                select(table.id, table.tenant).where(col(table.id).in_(ids[start : start + 500]))
            )
            owners.update({f"{kind}:{row_id}": owner for row_id, owner in rows})
    return owners
