"""What the evidence-column tests share: the two store kinds, values that stress the columns,
and the columns themselves (issue 36: migrations 0006 and 0007). SYNTHETIC values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Each test runs on both; the PostgreSQL one carries the `server` marker.
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.server)]
DEVICE = "NVIDIA H100 80GB HBM3 " + "é✓" * 117  # 256 characters, not all ASCII
LONG_ERROR = "ptxas error: too many resources requested for launch " * 185  # ~10,000 characters
# The evidence columns of outcomes and trajectories (each table has those of its own).
EVIDENCE_COLUMNS = (
    "origin",
    "coverage",
    "device_reported",
    "config",
    "credit",
    "timings_ms",
    "latency_spread_ms",
    "repetitions",
)


def database_url(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> str:
    """A new empty database of the backend (SQLite: a file under `tmp_path`; PostgreSQL:
    `conftest.new_pg_database`, skipped without a server)."""
    if backend == "postgres":
        return str(request.getfixturevalue("new_pg_database")())
    return f"sqlite:///{tmp_path / 'tunemem.db'}"


def evidence_of(row: Any) -> dict[str, Any]:
    """A row's evidence columns (and its latency and error), as read."""
    names = [*EVIDENCE_COLUMNS, "latency_ms", "error"]
    return {name: getattr(row, name) for name in names if hasattr(row, name)}
