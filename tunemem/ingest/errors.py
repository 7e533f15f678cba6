"""Typed errors of the ingest readers and the distiller.

A reader raises one of the `ReaderError`s only when a whole file (or folder) cannot be read as
its format; a bad record inside a readable file becomes a `RejectedRecord` instead. `read_any`
turns these errors into rejects too, so one unreadable file never stops an ingest run.
`distill` raises only `DistillError`, which the service turns into a reject of the trajectory.
"""

from __future__ import annotations


class ReaderError(Exception):
    """A file or folder cannot be read as the requested format."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class FileUnreadableError(ReaderError):
    """The bytes cannot be read or decoded (I/O error, bad gzip, bad JSON)."""


class FileTooLargeError(ReaderError):
    """The file holds more bytes (after decompression) than the per-file limit allows."""


class FormatMismatchError(ReaderError):
    """The file decodes, but its structure is not the format's (missing top-level keys...)."""


class UnsupportedVersionError(ReaderError):
    """The file declares a format version this reader does not understand."""


class UnknownFormatError(ReaderError):
    """No reader recognises the file (raised by `detect_format`)."""


class DistillError(ValueError):
    """A trajectory from which no lessons can be distilled; the reason says why."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason
