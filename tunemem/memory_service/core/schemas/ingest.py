"""API models of ingest: a batch of uploaded trajectories and the summary of what was stored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tunemem.memory_service.core.schemas.inbound import Inbound


class TrajectoriesIn(Inbound):
    model_config = ConfigDict(extra="forbid")

    trajectories: list[dict[str, Any]] = Field(min_length=1, max_length=1000)


class IngestSummary(BaseModel):
    read: int = 0
    added: int = 0
    merged: int = 0
    skipped: int = 0
    rejected: int = 0
    attempts: int = 0
    lessons_added: int = 0
    lessons_merged: int = 0
    unknown_chips: list[str] = Field(default_factory=list)
    rejects: list[dict[str, str]] = Field(default_factory=list)

    def merge(self, part: IngestSummary) -> None:
        """Add the counts, unknown chips and rejects of another ingest to this one."""
        for name in (
            "read",
            "added",
            "merged",
            "skipped",
            "rejected",
            "attempts",
            "lessons_added",
            "lessons_merged",
        ):
            setattr(self, name, getattr(self, name) + getattr(part, name))
        self.unknown_chips = sorted(set(self.unknown_chips) | set(part.unknown_chips))
        self.rejects.extend(part.rejects)
