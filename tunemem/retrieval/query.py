"""The text a retrieval embeds, and where a retrieved lesson came from: pure functions of the
request's fields and the lesson's applicability."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def query_text(
    query: str,
    *,
    stage: str,
    op: str | None = None,
    kernel: str | None = None,
    signature: Mapping[str, Any] | None = None,
    dtype: str | None = None,
    chip: str | None = None,
    backend: str | None = None,
    model: str | None = None,
    scenario: str | None = None,
) -> str:
    """Free text first, then one `key: value` line per given field, the stage last."""
    parts = [query.strip()] if query.strip() else []
    if op:
        parts.append(f"op: {op}")
    if kernel:
        parts.append(f"kernel: {kernel}")
    if signature:
        parts.append("signature: " + ", ".join(f"{k}={v}" for k, v in sorted(signature.items())))
    if dtype:
        parts.append(f"dtype: {dtype}")
    for key, value in (
        ("chip", chip),
        ("backend", backend),
        ("model", model),
        ("scenario", scenario),
    ):
        if value:
            parts.append(f"{key}: {value}")
    parts.append(f"stage: {stage}")
    return "\n".join(parts)


def source_scope(chips: list[str], backends: list[str]) -> str | None:
    """The scope a lesson was learned in: its first chip, else its first backend."""
    if chips:
        return f"chip:{chips[0]}"
    if backends:
        return f"backend:{backends[0]}"
    return None


def is_transferred(target_backend: str | None, source_backends: list[str]) -> bool:
    """A lesson is transferred when it names backends and the target's is not among them."""
    return bool(target_backend and source_backends and target_backend not in source_backends)
