"""The one loader of recorded search spaces: stored trajectories read as `RecordedSpace`s (chip,
op, parameter names, the fastest feasible time of each configuration), for the generalised
value's recorded reaches (`values.generalised_inputs`) and the transfer audit (`audit.transfer`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from tunemem.ingest.records import is_feasible
from tunemem.memory_service.core.sql.tables import Attempt
from tunemem.retrieval.recorded import RecordedSpace
from tunemem.retrieval.transfer import SearchSpace, config_key

# (trajectory id, chip, op, task JSON or None): what a space needs of its trajectory row.
TrajectoryHead = tuple[str, str, str, "dict[str, Any] | None"]


def problem_text(signature: Any) -> str | None:
    """A task signature's problem size as canonical JSON text (None when it names none)."""
    problem = signature.get("problem_size") if isinstance(signature, dict) else None
    return None if problem is None else json.dumps(problem, sort_keys=True)


def load_spaces(
    session: Session, trajectories: Sequence[TrajectoryHead]
) -> dict[str, RecordedSpace | None]:
    """Each trajectory as a search space, None for one without a feasible timed attempt.

    Spaces come in the order their first attempt is read, then the ones without attempts. A
    configuration recorded twice keeps its fastest feasible measurement; the parameter names
    are those of the first attempt with parameters.
    """
    heads = {tid: (chip, op, task) for tid, chip, op, task in trajectories}
    latency: dict[str, dict[str, float | None]] = {}
    keys: dict[str, frozenset[str]] = {}
    if heads:
        # Only the columns needed: a recorded space can hold thousands of attempts.
        for trajectory_id, params, compiled, correct, error_category, latency_ms in session.execute(
            sa_select(
                col(Attempt.trajectory_id),
                col(Attempt.params),
                col(Attempt.compiled),
                col(Attempt.correct),
                col(Attempt.error_category),
                col(Attempt.latency_ms),
            ).where(col(Attempt.trajectory_id).in_(list(heads)))
        ):
            if not params:
                continue
            feasible = is_feasible(compiled, correct, error_category)
            timed = latency_ms if feasible and latency_ms is not None and latency_ms > 0 else None
            key = config_key(params)
            table = latency.setdefault(trajectory_id, {})
            previous = table.get(key)
            table[key] = timed if previous is None else min(previous, timed or previous)
            keys.setdefault(trajectory_id, frozenset(params))
    out: dict[str, RecordedSpace | None] = {}
    for trajectory_id in [*latency, *(t for t in heads if t not in latency)]:
        space = SearchSpace(latency=latency.get(trajectory_id, {}))
        chip, op, task = heads[trajectory_id]
        if trajectory_id not in keys or space.optimum_ms is None:
            out[trajectory_id] = None
            continue
        problem = problem_text((task or {}).get("signature"))
        out[trajectory_id] = RecordedSpace(
            trajectory_id, chip, op, keys[trajectory_id], space, problem
        )
    return out
