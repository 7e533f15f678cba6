"""The tables of access control: API keys, store-wide flags and the write-quota buckets.

They live with the other tables in `sql/` so the store registers every table without importing
the access room above it; `memory_service.core.access` holds what is done with them.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from tunemem.memory_service.core.sql.tables import utcnow


class ApiKey(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=16)
    tenant: str = Field(default="default", max_length=64)
    role: str = Field(max_length=16)
    name: str = Field(default="", max_length=128)
    key_hash: str = Field(index=True, unique=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    revoked: bool = False


class StoreFlag(SQLModel, table=True):
    """A setting of the whole store that must outlive the rows that caused it."""

    name: str = Field(primary_key=True, max_length=32)
    value: str = Field(max_length=64)
    updated_at: datetime = Field(default_factory=utcnow)


class WriteBucket(SQLModel, table=True):
    key_hash: str = Field(primary_key=True, max_length=64)
    tokens: float
    stamp: float
