"""API models of the admin routes and of `/healthz`: what maintenance and a bundle move answer.

`memory_service.http.routes.admin` declares them as its response models and `RemoteService`
validates a server's answer into them, so the OpenAPI page and the client agree on each field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ValuesRebuilt(BaseModel):
    outcomes_replayed: int = Field(description="outcomes replayed from the log into the values")


class IndexRebuilt(BaseModel):
    lessons_indexed: int = Field(description="active lessons embedded into the vector index")


class BundleCounts(BaseModel):
    """Records per kind: written by an export, added by an import (0 where already held)."""

    lesson: int = 0
    trajectory: int = 0
    attempt: int = 0
    retrieval: int = 0
    outcome: int = 0


class StoreCounts(BaseModel):
    lessons: int
    trajectories: int
    attempts: int
    retrievals: int
    outcomes: int
    values: int


class HealthPublic(BaseModel):
    """Liveness; with a key, the counts of its tenant (an operator's: the whole store)."""

    status: Literal["ok", "degraded"] = Field(description="degraded: the index is unusable")
    index: str = Field(description='"ok", or why the vector index does not answer')
    counts: StoreCounts | None = Field(None, description="rows per table; only for a key")
    index_entries: int | None = Field(None, description="vectors in the index; only for a key")
    active_lessons: int | None = Field(None, description="active lessons in SQL; only for a key")
