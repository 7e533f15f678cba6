"""Trajectory route: upload whole runs in the native format; lessons are distilled from them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import ValidationError

import platforms
from ingest.readers import native
from ingest.records import TrajectoryRecord
from memory_service.core.errors import InvalidInput
from memory_service.core.schemas.ingest import IngestSummary, TrajectoriesIn
from memory_service.http.deps import ServiceDep
from memory_service.http.ratelimit import WriterDep

router = APIRouter(tags=["trajectories"])


@router.post("/v1/trajectories", status_code=201, response_model=IngestSummary)
def upload_trajectories(body: TrajectoriesIn, svc: ServiceDep, who: WriterDep) -> IngestSummary:
    """Upload whole runs in the native trajectory format; lessons are distilled from them."""
    records = []
    for position, raw in enumerate(body.trajectories):
        try:
            records.append(_native_record(raw))
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise InvalidInput(
                f"trajectories[{position}]: {exc}", code="invalid_trajectory"
            ) from exc
    return svc.ingest(records, tenant=who.tenant)


def _native_record(raw: dict[str, Any]) -> TrajectoryRecord:
    """Parse one native trajectory (the format's own parser and version rule) and normalise
    its chip name through `platforms`."""
    record = native.parse_record(raw)
    if not record.attempts:
        raise ValueError("a trajectory needs at least one attempt")
    chip = platforms.resolve(
        record.context.chip_raw or record.context.chip, backend=record.context.backend
    )
    record.context.chip_raw = record.context.chip_raw or record.context.chip
    record.context.chip = chip.id
    record.context.backend = chip.backend
    return record
