"""Reader registry: one module per external format, imported lazily.

Every reader module has `FORMAT` (its name), `detect(path) -> bool` (cheap: the name and the
first bytes) and `read(path)`, a generator of `TrajectoryRecord`s and `RejectedRecord`s.
Folder-shaped formats (KernelBench run folders, OpenEvolve checkpoints, KernelBench timing GPU
folders) also have `FOLDER = True` and detect a folder.

`read_any(paths)` is the entry point of an ingest run: it expands folders (each real file and
folder once, whatever links point at it), picks a reader per file (or uses the one asked for),
checks every trajectory with `ingest.validate.record_problem`, and turns every unreadable file,
oversized file and reader failure into a reject, so it never stops on bad input.
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from tunemem.ingest.errors import ReaderError, UnknownFormatError
from tunemem.ingest.provenance import READER_ORIGINS
from tunemem.ingest.records import RejectedRecord, TrajectoryRecord
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES
from tunemem.ingest.validate import record_problem

# Order matters for `auto`: the first reader whose `detect` accepts a path wins.
READERS: dict[str, str] = {
    "native": "tunemem.ingest.readers.native",
    "kerneltuner": "tunemem.ingest.readers.kerneltuner",
    "t4": "tunemem.ingest.readers.t4",
    "vllm-moe": "tunemem.ingest.readers.vllm_moe",
    "kernelbench-timing": "tunemem.ingest.readers.kernelbench_timing",
    "kernelbench-run": "tunemem.ingest.readers.kernelbench_run",
    "triton-autotune": "tunemem.ingest.readers.triton_autotune",
    "helion-autotune": "tunemem.ingest.readers.helion_autotune",
    "openevolve": "tunemem.ingest.readers.openevolve",
}

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})


def get_reader(name: str) -> ModuleType:
    """The reader module of a format name; ValueError naming the valid formats otherwise."""
    try:
        module_name = READERS[name]
    except KeyError:
        valid = ", ".join(["auto", *READERS])
        raise ValueError(f"unknown ingest format {name!r}; valid formats: {valid}") from None
    return importlib.import_module(module_name)


def _folder_readers() -> list[ModuleType]:
    modules = [get_reader(name) for name in READERS]
    return [m for m in modules if getattr(m, "FOLDER", False)]


def detect_format(path: Path) -> str:
    """Name of the first reader that recognises `path`; UnknownFormatError if none does."""
    path = Path(path)
    for name in READERS:
        reader = get_reader(name)
        if path.is_dir() and not getattr(reader, "FOLDER", False):
            continue
        if reader.detect(path):
            return name
    raise UnknownFormatError(path, "no reader recognises this file or folder")


def iter_paths(paths: Iterable[Path | str]) -> Iterator[Path]:
    """Expand folders into the files (and folder-shaped sources) under them, sorted.

    A folder that a folder-shaped reader recognises is yielded whole and not descended into.
    Hidden entries (names starting with ".") are skipped, and so, inside folders, are entries
    that are neither regular files nor folders (FIFOs, devices, dangling links). Every real
    file or folder is yielded or walked once, by (device, inode), so symbolic-link loops end
    and a file reached by two names is read once, under the first name in walk order.
    """
    folder_readers = _folder_readers()
    seen: set[tuple[int, int]] = set()
    stack = [(Path(p), True) for p in reversed(list(paths))]
    while stack:
        path, explicit = stack.pop()
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            if explicit:
                yield path  # named by the caller: reading it gives the reject with the reason
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        if not stat.S_ISDIR(info.st_mode):
            if explicit or stat.S_ISREG(info.st_mode):
                yield path
            continue
        if any(reader.detect(path) for reader in folder_readers):
            yield path
            continue
        try:
            children = sorted(path.iterdir())
        except OSError:
            continue
        stack.extend(
            (child, False)
            for child in reversed(children)
            if not child.name.startswith(".") and child.name not in _SKIPPED_DIRS
        )


def read_any(
    paths: Iterable[Path | str],
    fmt: str = "auto",
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Read every trajectory under `paths`, streaming, one source file at a time.

    Args:
        paths: files and folders; folders are expanded with `iter_paths`.
        fmt: a format name from `READERS`, or "auto" to detect per file.
        max_file_bytes: the most bytes one file may yield (after decompression); a larger
            file is rejected once the limit is passed, costing no more than the limit.

    Yields:
        `TrajectoryRecord`s, and `RejectedRecord`s for bad records, unreadable or oversized
        files (position "file") and readers that fail on a file ("file", with the error).
        With "auto", a file found inside a folder that no reader recognises is skipped
        silently (READMEs, scripts); a file named explicitly is rejected.
    """
    forced = None if fmt == "auto" else get_reader(fmt)
    given = [Path(p) for p in paths]
    explicit = {p for p in given if not p.is_dir()}
    for path in iter_paths(given):
        if path.exists() and not (path.is_file() or path.is_dir()):
            yield RejectedRecord(str(path), "file", "not a regular file or folder")
            continue
        problem = unreadable(path)
        if problem:
            yield RejectedRecord(str(path), "file", problem)
            continue
        reader = forced
        if reader is None:
            try:
                reader = get_reader(detect_format(path))
            except UnknownFormatError as exc:
                if path in explicit:
                    yield RejectedRecord(str(path), "file", exc.reason)
                continue
            except OSError as exc:  # the file went away or became unreadable meanwhile
                yield RejectedRecord(str(path), "file", f"unreadable: {exc.strerror or exc}")
                continue
        yield from _read_checked(reader, path, max_file_bytes)


def unreadable(path: Path) -> str | None:
    """Why a file (or folder) cannot be read, checked before any reader looks at it, so an
    unreadable input is a reject saying so wherever it was found; None when it can be read."""
    try:
        if not path.exists():
            return None  # the reader's own reject says the file is missing
        if path.is_dir():
            with os.scandir(path) as entries:
                next(entries, None)
        else:
            with path.open("rb") as fh:
                fh.read(1)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return None


def _read_checked(
    reader: ModuleType, path: Path, max_file_bytes: int
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """One source through its reader: records checked, every failure a reject."""
    count = 0
    try:
        for record in reader.read(path, max_bytes=max_file_bytes):
            count += 1
            if isinstance(record, TrajectoryRecord):
                _default_provenance(record, reader.FORMAT)
                problem = record_problem(record)
                if problem:
                    record = RejectedRecord(str(path), f"trajectory {count}", problem)
            yield record
    except ReaderError as exc:
        yield RejectedRecord(str(path), "file", exc.reason)
    except Exception as exc:
        # A reader bug on a malformed file must not stop the run: it is a reject that names
        # the error, after whatever the reader yielded before it.
        reason = f"reader {reader.FORMAT} failed: {type(exc).__name__}: {str(exc)[:300]}"
        yield RejectedRecord(str(path), "file", reason)


def _default_provenance(record: TrajectoryRecord, fmt: str) -> None:
    """A file's records are what the file is (`provenance.READER_ORIGINS`), unless the record
    says otherwise (tunemem's own JSONL carries each run's); a file that is not known to hold
    a whole search space holds part of one."""
    if record.provenance.origin == "unstated" and fmt in READER_ORIGINS:
        record.provenance.origin = READER_ORIGINS[fmt]
        if record.provenance.coverage == "unstated":
            record.provenance.coverage = "partial"
