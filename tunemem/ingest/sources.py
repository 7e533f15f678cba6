"""Loading source files within a size limit, and naming them stably.

`source_label` gives the `source` string of trajectories: the file's folder and name plus a
content hash ("convolution/A100.json.gz@3f2a9c0d1e2b"). It does not depend on where the file
lies or on the working directory, so re-ingesting the same file gives the same trajectory ids,
while two different files with the same name do not collide.

Every read goes through `open_capped`, which stops with `FileTooLargeError` once a file has
yielded more than `max_bytes` (decompressed, for `.gz`): a small gzip bomb costs at most the
limit in memory and time, never the size it expands to.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import zlib
from pathlib import Path
from typing import IO, Any, Protocol, TypeGuard

import orjson

from tunemem.ingest.errors import FileTooLargeError, FileUnreadableError

# 8x the largest file of the real data set (16.6 MB decompressed, a Kernel Tuner GEMM cache).
DEFAULT_MAX_FILE_BYTES = 128 * 2**20

_READ_ERRORS = (OSError, EOFError, zlib.error)


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class _CappedStream(io.RawIOBase):
    """A binary stream that raises `FileTooLargeError` past `max_bytes` bytes read."""

    def __init__(self, inner: _Readable, path: Path, max_bytes: int) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._max = max_bytes
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        room = min(len(buffer), self._max + 1 - self._count)
        chunk = self._inner.read(max(room, 1))
        self._count += len(chunk)
        if self._count > self._max:
            raise too_large(self._path, self._max)
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def close(self) -> None:
        self._inner.close()
        super().close()


def too_large(path: Path, max_bytes: int) -> FileTooLargeError:
    """The reject of a file over the per-file limit, naming the limit and the setting."""
    what = "decompressed " if path.name.endswith(".gz") else ""
    return FileTooLargeError(
        path,
        f"more than {max_bytes:,} {what}bytes: over the per-file ingest limit "
        "(setting ingest_max_file_bytes, TUNEMEM_INGEST_MAX_FILE_BYTES)",
    )


def open_capped(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> IO[bytes]:
    """Open a file for reading (decompressing `.gz`), stopping past `max_bytes` bytes."""
    try:
        inner: _Readable = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    except _READ_ERRORS as exc:
        raise FileUnreadableError(path, f"cannot open: {exc}") from exc
    return io.BufferedReader(_CappedStream(inner, path, max_bytes))


def parse_json(blob: bytes | str) -> Any:
    """`json.loads`, through orjson (several times faster on large caches) when it can.

    orjson refuses what the standard parser accepts and some files hold (NaN and Infinity,
    integers past 64 bits); those documents go to the standard parser, so the result is the same.
    """
    try:
        return orjson.loads(blob)
    except orjson.JSONDecodeError:
        return json.loads(blob)


def read_bytes(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The file's bytes, decompressed when its name ends in `.gz`, at most `max_bytes`."""
    with open_capped(path, max_bytes) as handle:
        try:
            return handle.read()
        except _READ_ERRORS as exc:
            raise FileUnreadableError(path, f"cannot read: {exc}") from exc


def load_json(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[Any, str]:
    """Parse a (possibly gzipped) JSON file; returns the document and its content digest."""
    blob = read_bytes(path, max_bytes)
    try:
        doc = parse_json(blob)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FileUnreadableError(path, f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise FileUnreadableError(path, "JSON nested too deeply to parse") from exc
    return doc, hashlib.sha256(blob).hexdigest()[:12]


def head(path: Path, size: int = 2048) -> bytes:
    """The first bytes of a file (decompressed for `.gz`), for cheap format detection."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with open(path, "rb") as handle:
            return handle.read(size)
    except _READ_ERRORS:
        return b""


def source_label(path: Path, digest: str) -> str:
    """Stable `source` of a file or folder: "<parent>/<name>@<content digest>"."""
    return f"{path.parent.name}/{path.name}@{digest}"


def digest_of(parts: list[bytes]) -> str:
    """Content digest of several blobs (the files of a folder-shaped source)."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(hashlib.sha256(part).digest())
    return hasher.hexdigest()[:12]


def is_number(value: Any) -> TypeGuard[int | float]:
    """A real JSON number (bools are not numbers here), infinities included."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """`value` as a finite float, or None for non-numbers, NaN, infinities and huge ints."""
    if not is_number(value):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
