"""Reader registry: one module per external format, imported lazily.

Every reader module has `FORMAT` (its name), `detect(path) -> bool` (cheap: the name and the
first bytes) and `read(path)`, a generator of `TrajectoryRecord`s and `RejectedRecord`s.
Folder-shaped formats (KernelBench run folders, OpenEvolve checkpoints, KernelBench timing GPU
folders) also have `FOLDER = True` and detect a folder.

`read_any(paths)` is the entry point of an ingest run: it expands folders, picks a reader per
file (or uses the one asked for), and turns every unreadable file into a reject, so it never
stops on bad input.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from ingest.errors import ReaderError, UnknownFormatError
from ingest.records import RejectedRecord, TrajectoryRecord

# Order matters for `auto`: the first reader whose `detect` accepts a path wins.
READERS: dict[str, str] = {
    "native": "ingest.readers.native",
    "kerneltuner": "ingest.readers.kerneltuner",
    "t4": "ingest.readers.t4",
    "vllm-moe": "ingest.readers.vllm_moe",
    "kernelbench-timing": "ingest.readers.kernelbench_timing",
    "kernelbench-run": "ingest.readers.kernelbench_run",
    "triton-autotune": "ingest.readers.triton_autotune",
    "openevolve": "ingest.readers.openevolve",
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
    Hidden entries (names starting with ".") are skipped.
    """
    folder_readers = _folder_readers()
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            yield path
            continue
        if any(reader.detect(path) for reader in folder_readers):
            yield path
            continue
        for child in sorted(path.iterdir()):
            if child.name.startswith(".") or child.name in _SKIPPED_DIRS:
                continue
            yield from iter_paths([child])


def read_any(
    paths: Iterable[Path | str], fmt: str = "auto"
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Read every trajectory under `paths`, streaming, one source file at a time.

    Args:
        paths: files and folders; folders are expanded with `iter_paths`.
        fmt: a format name from `READERS`, or "auto" to detect per file.

    Yields:
        `TrajectoryRecord`s, and `RejectedRecord`s for bad records and unreadable files
        (position "file"). With "auto", a file found inside a folder that no reader
        recognises is skipped silently (READMEs, scripts); a file named explicitly is rejected.
    """
    forced = None if fmt == "auto" else get_reader(fmt)
    given = [Path(p) for p in paths]
    explicit = {p for p in given if not p.is_dir()}
    for path in iter_paths(given):
        reader = forced
        if reader is None:
            try:
                reader = get_reader(detect_format(path))
            except UnknownFormatError as exc:
                if path in explicit:
                    yield RejectedRecord(str(path), "file", exc.reason)
                continue
        try:
            yield from reader.read(path)
        except ReaderError as exc:
            yield RejectedRecord(str(path), "file", exc.reason)
