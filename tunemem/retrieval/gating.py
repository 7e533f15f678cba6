"""Candidate gating: the hard applicability filters and the similarity floor.

A lesson's applicability lists are "any" when empty. Hard filters follow DESIGN section 4:
op family (when both sides name one), dtype, and backend compatibility of code. Chips,
families and models are soft: they shape the value scope, not eligibility, because lessons
are meant to travel across chips.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Query:
    """The applicability-relevant part of a retrieval request."""

    op: str | None = None
    dtype: str | None = None
    backend: str | None = None


def _norm(value: Any) -> str:
    return str(value).strip().lower()


def exclusion_reason(applicability: Mapping[str, Any], has_code: bool, query: Query) -> str | None:
    """Why a lesson cannot apply to the query, or None when it may.

    Args:
        applicability: the lesson's applicability mapping.
        has_code: whether the lesson carries code (code only runs on its own backends).
        query: the request's op, dtype and target backend.

    Returns:
        A short reason string, or None.
    """
    lesson_op = applicability.get("op")
    if query.op and lesson_op and _norm(lesson_op) != _norm(query.op):
        return f"op {lesson_op} != {query.op}"
    dtypes = [_norm(d) for d in applicability.get("dtypes") or []]
    if query.dtype and dtypes and _norm(query.dtype) not in dtypes:
        return f"dtype {query.dtype} not in {dtypes}"
    backends = [_norm(b) for b in applicability.get("backends") or []]
    if has_code and query.backend and backends and _norm(query.backend) not in backends:
        return f"code is for {backends}, target is {query.backend}"
    return None


def gate(
    candidates: list[tuple[str, float, Mapping[str, Any], bool]],
    query: Query,
    similarity_floor: float,
) -> list[tuple[str, float]]:
    """Keep candidates that pass the hard filters and the similarity floor.

    Args:
        candidates: (lesson id, cosine similarity, applicability, has code).
        query: the request's applicability-relevant fields.
        similarity_floor: candidates below it are dropped (delta in DESIGN section 4).

    Returns:
        (lesson id, similarity) of the admitted candidates, in input order.
    """
    admitted = []
    for lesson_id, similarity, applicability, has_code in candidates:
        if similarity < similarity_floor:
            continue
        if exclusion_reason(applicability, has_code, query) is not None:
            continue
        admitted.append((lesson_id, similarity))
    return admitted
