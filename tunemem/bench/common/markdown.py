"""The one Markdown table renderer of the benchmark reports: a header, its rule and the rows,
each cell as text (`cell`: None as "-", floats to a fixed number of digits)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any, digits: int = 3) -> str:
    """A table cell: "-" for nothing, a float to `digits` places, anything else as text."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def row(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(
    header: Sequence[str], rows: Iterable[Sequence[Any]], *, compact: bool = False
) -> list[str]:
    """The lines of one table; `compact` writes the rule as |---|---| (some committed reports
    use it), otherwise | --- | --- |."""
    rule = "|" + "|".join("---" for _ in header) + "|" if compact else row(["---"] * len(header))
    return [row(header), rule, *(row(r) for r in rows)]
