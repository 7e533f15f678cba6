"""tunemem's own trajectory format: JSON Lines, one `TrajectoryRecord.to_dict()` per line.

The format is documented in `ingest/NATIVE_FORMAT.md`. Files end in `.jsonl` (or
`.jsonl.gz`); every line carries `"version"`; lines of a newer version than this reader knows
are rejected with the reason, not guessed at.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from tunemem.ingest.chip_context import settle_chip
from tunemem.ingest.errors import FileUnreadableError
from tunemem.ingest.records import (
    NATIVE_FORMAT_VERSION,
    RecordShapeError,
    RejectedRecord,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES, head, open_capped
from tunemem.ingest.validate import record_problem

FORMAT = "native"


def detect(path: Path) -> bool:
    """A `.jsonl[.gz]` file whose first line is a versioned trajectory."""
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
        return False
    first = head(path, 4096).lstrip()
    return first.startswith(b"{") and b'"source_format"' in first and b'"version"' in first


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield one trajectory per non-blank line; a bad line becomes a reject ("line N").

    The lines before a file passes `max_bytes` (decompressed) are read; then the file is
    rejected with `FileTooLargeError`.
    """
    handle = io.TextIOWrapper(open_capped(path, max_bytes), encoding="utf-8")
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                yield _parse_line(path, number, line)
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
            raise FileUnreadableError(path, f"cannot read past line: {exc}") from exc


class NativeRecordError(ValueError):
    """A decoded native trajectory that cannot be used; the message says why, in words."""


def parse_record(data: object) -> TrajectoryRecord:
    """One native trajectory from its decoded JSON (a file's line, an uploaded item), checked.

    The one version rule of the format: `version` is a required integer no newer than this
    reader's. The chip is settled through the registry (`settle_chip`): a device name becomes
    its chip id, an unknown one `unknown:<slug>`, accepted. Raises NativeRecordError naming
    the problem.
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
    problem = record_problem(record)
    if problem:
        raise NativeRecordError(problem)
    settle_chip(record.context)
    return record


def _parse_line(path: Path, number: int, line: str) -> TrajectoryRecord | RejectedRecord:
    position = f"line {number}"
    try:
        return parse_record(json.loads(line))
    except ValueError as exc:  # JSONDecodeError and NativeRecordError
        reason = str(exc) if isinstance(exc, NativeRecordError) else f"not valid JSON: {exc}"
        return RejectedRecord(str(path), position, reason)
    except RecursionError:
        return RejectedRecord(str(path), position, "JSON nested too deeply to parse")


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
