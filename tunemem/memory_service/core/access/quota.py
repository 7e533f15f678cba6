"""The per-key write quota, counted in the SQL store so that every worker of one store spends
from the same bucket (N workers never give a key N times its quota).

A token bucket per key: `per_minute` writes in a burst, then `per_minute / 60` a second. One
row per key (`WriteBucket`); a write spends a token with one conditional UPDATE, atomic on
SQLite and PostgreSQL alike, so concurrent workers cannot both spend the last token. Time is
the wall clock (`time.time`), the one clock that workers on several hosts share.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import case, insert, literal, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from tunemem.memory_service.core.sql.access_tables import WriteBucket


class SharedWriteQuota:
    """Token buckets keyed by the hash of a bearer key, kept in the store's SQL database."""

    def __init__(
        self, engine: Engine, per_minute: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.engine = engine
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock

    def take(self, key: str) -> float:
        """Spend one write of `key`; 0.0 when allowed, else the seconds until one is."""
        now = self.clock()
        table = WriteBucket.__table__  # type: ignore[attr-defined]
        refilled = table.c.tokens + (literal(now) - table.c.stamp) * self.rate
        available = case((refilled > self.capacity, self.capacity), else_=refilled)
        for _ in range(3):
            with self.engine.begin() as connection:
                spent = connection.execute(
                    update(table)
                    .where(table.c.key_hash == key, available >= 1.0)
                    .values(tokens=available - 1.0, stamp=now)
                )
                if spent.rowcount == 1:
                    return 0.0
                row = connection.execute(
                    select(table.c.tokens, table.c.stamp).where(table.c.key_hash == key)
                ).first()
                if row is not None:
                    tokens = min(self.capacity, row.tokens + (now - row.stamp) * self.rate)
                    return max(0.0, (1.0 - tokens) / self.rate)
            try:
                with self.engine.begin() as connection:
                    connection.execute(
                        insert(table).values(key_hash=key, tokens=self.capacity - 1.0, stamp=now)
                    )
                return 0.0
            except IntegrityError:
                continue  # another worker made the bucket first: spend from it
        raise RuntimeError("the write quota row could neither be updated nor created")
