"""Mapping of the failure markers that tuners record to tunemem's error categories.

Kernel Tuner stores a failed configuration's `time` as a class name string
("CompilationFailedConfig", "RuntimeFailedConfig", "InvalidConfig", "ErrorConfig"...); T4
files say `invalidity` ("compile", "runtime", "correctness", "constraints", "timeout").
"""

from __future__ import annotations

from functools import lru_cache

# First matching fragment (lower-cased) wins; order puts the specific before the general.
_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("compil", "compile"),
    ("resource", "resources"),
    ("outofmemory", "resources"),
    ("out of memory", "resources"),
    ("shared memory", "resources"),
    ("timeout", "timeout"),
    ("timed out", "timeout"),
    ("correctness", "incorrect"),
    ("incorrect", "incorrect"),
    ("mismatch", "incorrect"),
    ("runtime", "runtime"),
    ("launch", "runtime"),
)


@lru_cache(maxsize=256)
def failure_category(marker: str) -> str:
    """The error category of a tuner's failure marker; "other" when nothing matches.

    >>> failure_category("CompilationFailedConfig"), failure_category("RuntimeFailedConfig")
    ('compile', 'runtime')
    """
    lowered = marker.lower()
    for fragment, category in _FRAGMENTS:
        if fragment in lowered:
            return category
    return "other"
