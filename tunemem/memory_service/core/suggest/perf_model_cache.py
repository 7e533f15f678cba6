"""Performance models, a part of the service: caches of `search.model.family` rebuilt from SQL.

A family is an op with one set of parameter names. Its model is trained from the attempts of
every stored trajectory of that op whose configurations carry exactly those parameters (one
column per chip, or per chip and problem when a chip holds several problems of the family). The
model is a cache, never a second source of truth: each request compares a fingerprint of the
family's stored trajectories (count, attempts, newest) with the one the cached model was built
from, and when they differ a rebuild starts on a background thread. The request never waits for
a full training unless `model_wait_s` says so: it answers with the previous model, or without
one while the first build runs. Builds run one at a time, the tenants taking turns, and a tenant
has at most `per_tenant` builds waiting (a request past that starts none; a later one asks
again), so a tenant asking about many parameter sets delays another's first model by one build,
not by its whole queue. A stored attempt the model cannot use (a parameter value that
is a list or an object, a latency outside 1e-9..1e9 ms: a store written before the upload door
checked them) is left out, counted in `BuiltModel.skipped` and logged; it never turns the
family's model off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from tunemem.ingest.records import is_feasible
from tunemem.ingest.validate import MAX_LATENCY_MS, MIN_LATENCY_MS, scalar_problem
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Attempt, Trajectory
from tunemem.search.model.family import ChipSpace, FamilyModel, build_family_model
from tunemem.search.model.pooled import KeyContext

log = logging.getLogger(__name__)

Fingerprint = tuple[int, int, str]
FamilyKey = tuple[str, str, tuple[str, ...]]  # tenant, op, sorted parameter names


@dataclass(frozen=True)
class BuiltModel:
    """A trained family model with what it was built from."""

    model: FamilyModel
    fingerprint: Fingerprint
    columns: dict[str, tuple[str, str | None]]  # column label -> (chip, problem key)
    build_s: float
    n_configs: int
    skipped: int = 0  # stored attempts left out: unusable parameter values


def problem_key(signature: dict[str, Any] | None) -> str:
    """A short stable key of a task signature without the parameter names it lists."""
    fields = {k: v for k, v in (signature or {}).items() if k != "tune_params_keys"}
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _latency(attempt: Attempt) -> float | None:
    ok = is_feasible(attempt.compiled, attempt.correct, attempt.error_category)
    ms = attempt.latency_ms
    if not ok or not isinstance(ms, int | float) or not MIN_LATENCY_MS <= ms <= MAX_LATENCY_MS:
        return None
    return float(ms)


def _usable_params(params: Any, names: tuple[str, ...]) -> bool:
    return isinstance(params, dict) and all(scalar_problem(params[p], p) is None for p in names)


class PerformanceModels:
    """Per-family model caches of one service, rebuilt off the request path."""

    def __init__(
        self, store: Store, wait_s: float = 0.0, seed: int = 0, per_tenant: int = 2
    ) -> None:
        self.store = store
        self.wait_s = wait_s
        self.seed = seed
        self.per_tenant = max(1, per_tenant)
        self._cache: dict[FamilyKey, BuiltModel | None] = {}
        self._built: dict[FamilyKey, Fingerprint] = {}
        self._pending: dict[FamilyKey, tuple[Fingerprint, Future[BuiltModel | None]]] = {}
        # Waiting builds per tenant, and the order in which tenants take their turns.
        self._queues: dict[str, deque[tuple[FamilyKey, Fingerprint, Future[Any]]]] = {}
        self._turns: deque[str] = deque()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tunemem-model")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for queue in self._queues.values():
                for _, _, future in queue:
                    future.cancel()
            self._queues.clear()
            self._turns.clear()

    def _queue(self, key: FamilyKey, fingerprint: Fingerprint) -> Future[Any] | None:
        """Queue a build in its tenant's turn (under the lock); None when the tenant has as
        many waiting as it may."""
        tenant = key[0]
        queue = self._queues.setdefault(tenant, deque())
        if len(queue) >= self.per_tenant:
            return None
        future: Future[Any] = Future()
        queue.append((key, fingerprint, future))
        if tenant not in self._turns:
            self._turns.append(tenant)
        self._pending[key] = (fingerprint, future)
        self._pool.submit(self._run_next)
        return future

    def _run_next(self) -> None:
        """Build the next tenant's oldest waiting family (one job of the pool per build)."""
        with self._lock:
            if not self._turns:
                return
            tenant = self._turns.popleft()
            queue = self._queues[tenant]
            key, fingerprint, future = queue.popleft()
            if queue:
                self._turns.append(tenant)
            else:
                del self._queues[tenant]
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(self._build(key, fingerprint))
        except BaseException as exc:  # handed to whoever waits on it
            future.set_exception(exc)

    def fingerprint(self, tenant: str, op: str) -> Fingerprint:
        with self.store.session() as session:
            row = session.exec(
                select(
                    func.count(col(Trajectory.id)),
                    func.coalesce(func.sum(Trajectory.n_attempts), 0),
                    func.max(Trajectory.created_at),
                ).where(Trajectory.tenant == tenant, Trajectory.op == op)
            ).one()
        return int(row[0]), int(row[1]), str(row[2])

    def get(self, tenant: str, op: str, params: Sequence[str]) -> BuiltModel | None:
        """The family's current model; starts a rebuild when the store changed since.

        Returns the previous model (or None) at once unless `wait_s` allows waiting for the
        build in progress.
        """
        key: FamilyKey = (tenant, op, tuple(sorted(params)))
        fingerprint = self.fingerprint(tenant, op)
        if fingerprint[0] == 0:
            return None
        with self._lock:
            current = self._cache.get(key)
            if self._built.get(key) == fingerprint:
                return current
            pending = self._pending.get(key)
            if pending is None or pending[0] != fingerprint:
                future = self._queue(key, fingerprint)
            else:
                future = pending[1]
        if future is not None and self.wait_s > 0:
            try:
                return future.result(timeout=self.wait_s)
            except TimeoutError:
                log.warning("model of %s still training after %.1f s", op, self.wait_s)
        return current

    def _build(self, key: FamilyKey, fingerprint: Fingerprint) -> BuiltModel | None:
        tenant, op, params = key
        started = time.perf_counter()
        skipped = 0
        try:
            spaces, columns, skipped = self._spaces(tenant, op, params)
            n_configs = sum(len(space.measurements) for space in spaces)
            model = build_family_model(params, spaces, seed=self.seed) if spaces else None
        except Exception:  # a failed build leaves suggest without a model, never failing it
            log.exception("building the model of %s failed", op)
            model, columns, n_configs = None, {}, 0
        built = (
            BuiltModel(
                model, fingerprint, columns, time.perf_counter() - started, n_configs, skipped
            )
            if model is not None
            else None
        )
        with self._lock:
            self._cache[key] = built
            self._built[key] = fingerprint
        if skipped:
            log.warning("model of %s: %d stored attempt(s) left out (unusable values)", op, skipped)
        if built is not None:
            log.info("model of %s: %d configurations in %.1f s", op, n_configs, built.build_s)
        return built

    def _spaces(
        self, tenant: str, op: str, params: tuple[str, ...]
    ) -> tuple[list[ChipSpace], dict[str, tuple[str, str | None]], int]:
        """Every stored configuration of the family, grouped by chip and problem, and how many
        attempts of the family were left out as unusable."""
        wanted = set(params)
        skipped = 0
        groups: dict[tuple[str, str], dict[tuple[Any, ...], float | None]] = {}
        signatures: dict[tuple[str, str], dict[str, Any]] = {}
        with self.store.session() as session:
            trajectories = session.exec(
                select(Trajectory)
                .where(Trajectory.tenant == tenant, Trajectory.op == op)
                .order_by(col(Trajectory.created_at), col(Trajectory.id))
            ).all()
            for trajectory in trajectories:
                problem = problem_key((trajectory.task or {}).get("signature"))
                attempts = session.exec(
                    select(Attempt)
                    .where(Attempt.trajectory_id == trajectory.id)
                    .order_by(col(Attempt.index))
                ).all()
                group = groups.setdefault((trajectory.chip, problem), {})
                signatures.setdefault(
                    (trajectory.chip, problem), dict((trajectory.task or {}).get("signature") or {})
                )
                for attempt in attempts:
                    if not isinstance(attempt.params, dict) or set(attempt.params) != wanted:
                        continue
                    if _usable_params(attempt.params, params):
                        group[tuple(attempt.params[p] for p in params)] = _latency(attempt)
                    else:
                        skipped += 1
        groups = {k: v for k, v in groups.items() if v}
        problems_of: dict[str, int] = {}
        for chip, _ in groups:
            problems_of[chip] = problems_of.get(chip, 0) + 1
        spaces: list[ChipSpace] = []
        columns: dict[str, tuple[str, str | None]] = {}
        for (chip, problem), measurements in sorted(groups.items()):
            label = chip if problems_of[chip] == 1 else f"{chip}@{problem}"
            columns[label] = (chip, problem)
            key = KeyContext.of(signatures.get((chip, problem)), chip)
            spaces.append(ChipSpace(label, measurements, key))
        return spaces, columns, skipped
