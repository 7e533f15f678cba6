"""tunemem's own trajectory format: JSON Lines, one `TrajectoryRecord.to_dict()` per line.

The format is documented in `ingest/NATIVE_FORMAT.md`. Files end in `.jsonl` (or
`.jsonl.gz`); every line carries `"version"`; lines of a newer version than this reader knows
are rejected with the reason, not guessed at.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from ingest.errors import FileUnreadableError
from ingest.records import (
    NATIVE_FORMAT_VERSION,
    RecordShapeError,
    RejectedRecord,
    TrajectoryRecord,
)
from ingest.sources import head

FORMAT = "native"


def detect(path: Path) -> bool:
    """A `.jsonl[.gz]` file whose first line is a versioned trajectory."""
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
        return False
    first = head(path, 4096).lstrip()
    return first.startswith(b"{") and b'"source_format"' in first and b'"version"' in first


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read(path: Path) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield one trajectory per non-blank line; a bad line becomes a reject ("line N")."""
    try:
        handle = _open_text(path)
    except OSError as exc:
        raise FileUnreadableError(path, f"cannot open: {exc}") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                yield _parse_line(path, number, line)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise FileUnreadableError(path, f"cannot read past line: {exc}") from exc


class NativeRecordError(ValueError):
    """A decoded native trajectory that cannot be used; the message says why, in words."""


def parse_record(data: object) -> TrajectoryRecord:
    """One native trajectory from its decoded JSON (a file's line, an uploaded item), checked.

    The one version rule of the format: `version` is a required integer no newer than this
    reader's. Raises NativeRecordError naming the problem.
    """
    if not isinstance(data, dict):
        raise NativeRecordError("a line must be a JSON object")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise NativeRecordError("missing or non-integer 'version'")
    if version > NATIVE_FORMAT_VERSION:
        raise NativeRecordError(
            f"format version {version} is newer than this reader ({NATIVE_FORMAT_VERSION})"
        )
    try:
        record = TrajectoryRecord.from_dict(data)
    except RecordShapeError as exc:
        raise NativeRecordError(f"not a trajectory record: {exc}") from exc
    problem = _check(record)
    if problem:
        raise NativeRecordError(problem)
    return record


def _parse_line(path: Path, number: int, line: str) -> TrajectoryRecord | RejectedRecord:
    position = f"line {number}"
    try:
        return parse_record(json.loads(line))
    except ValueError as exc:  # JSONDecodeError and NativeRecordError
        reason = str(exc) if isinstance(exc, NativeRecordError) else f"not valid JSON: {exc}"
        return RejectedRecord(str(path), position, reason)


def _check(record: TrajectoryRecord) -> str | None:
    """Reasons a structurally complete record is still unusable."""
    if not record.task.op:
        return "task.op is empty"
    if not record.context.chip or not record.context.backend:
        return "context.chip and context.backend are required"
    for attempt in record.attempts:
        for name in ("latency_ms", "latency_min_ms"):
            value = getattr(attempt, name)
            if value is not None and (not isinstance(value, int | float) or value < 0):
                return f"attempt {attempt.index}: {name} must be a non-negative number"
    return None


def write_native(records: Iterable[TrajectoryRecord], path: Path | str) -> int:
    """Write trajectories as native JSONL (gzipped if the name ends in `.gz`); returns count."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    count = 0
    with opener(path, "wt", encoding="utf-8") as handle:  # type: ignore[operator]
        for record in records:
            handle.write(json.dumps(record.to_dict(), separators=(",", ":"), default=str))
            handle.write("\n")
            count += 1
    return count
