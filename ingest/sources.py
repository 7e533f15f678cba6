"""Loading source files and naming them stably.

`source_label` gives the `source` string of trajectories: the file's folder and name plus a
content hash ("convolution/A100.json.gz@3f2a9c0d1e2b"). It does not depend on where the file
lies or on the working directory, so re-ingesting the same file gives the same trajectory ids,
while two different files with the same name do not collide.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any, TypeGuard

import orjson

from ingest.errors import FileUnreadableError


def read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when its name ends in `.gz`."""
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.name.endswith(".gz") else raw
    except (OSError, EOFError) as exc:
        raise FileUnreadableError(path, f"cannot read: {exc}") from exc


def parse_json(blob: bytes | str) -> Any:
    """`json.loads`, through orjson (several times faster on large caches) when it can.

    orjson refuses what the standard parser accepts and some files hold (NaN and Infinity,
    integers past 64 bits); those documents go to the standard parser, so the result is the same.
    """
    try:
        return orjson.loads(blob)
    except orjson.JSONDecodeError:
        return json.loads(blob)


def load_json(path: Path) -> tuple[Any, str]:
    """Parse a (possibly gzipped) JSON file; returns the document and its content digest."""
    blob = read_bytes(path)
    try:
        doc = parse_json(blob)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FileUnreadableError(path, f"not valid JSON: {exc}") from exc
    return doc, hashlib.sha256(blob).hexdigest()[:12]


def head(path: Path, size: int = 2048) -> bytes:
    """The first bytes of a file (decompressed for `.gz`), for cheap format detection."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with open(path, "rb") as handle:
            return handle.read(size)
    except (OSError, EOFError):
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
    """A real JSON number (bools are not numbers here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
