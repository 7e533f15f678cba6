"""Uploaded trajectories (`POST /v1/trajectories`, `RemoteService.upload_trajectories`): the
native format's records, parsed by its own reader rules before anything is stored.

A file's bad line becomes a reject and the file goes on; an upload is one request, so one bad
trajectory refuses the whole batch (`invalid_trajectory`, naming its position and the reader's
reason) and nothing of it is stored. Chips are settled by the reader itself
(`ingest.chip_context.settle_chip`), so an unknown chip is accepted and listed in the summary's
`unknown_chips` exactly as file ingest lists it.
"""

from __future__ import annotations

from typing import Any

from tunemem.ingest.readers.native import NativeRecordError, parse_record
from tunemem.ingest.records import TrajectoryRecord
from tunemem.memory_service.core.errors import InvalidInput


def uploaded_records(trajectories: list[dict[str, Any]]) -> list[TrajectoryRecord]:
    """Every uploaded trajectory as a record, or InvalidInput for the first that is not one."""
    records = []
    for position, raw in enumerate(trajectories):
        try:
            record = parse_record(raw)
            if not record.attempts:
                raise NativeRecordError("a trajectory needs at least one attempt")
        except (KeyError, TypeError, ValueError) as exc:  # NativeRecordError and its kin
            raise InvalidInput(
                f"trajectories[{position}]: {exc}", code="invalid_trajectory"
            ) from exc
        records.append(record)
    return records
