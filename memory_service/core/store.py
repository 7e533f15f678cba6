"""SQL store: engine creation (SQLite in WAL mode by default, PostgreSQL by URL), the tables,
and `Store`, the engine plus the write lock that the service's parts share."""

from __future__ import annotations

import threading

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, create_engine

from memory_service.core import auth, schema  # noqa: F401  (registers the tables)
from memory_service.core.settings import Settings


def create_store_engine(url: str) -> Engine:
    """Create the engine and the tables; SQLite gets WAL, foreign keys and a busy timeout."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    else:
        engine = create_engine(url, pool_pre_ping=True)
    SQLModel.metadata.create_all(engine)
    return engine


class Store:
    """The SQL source of truth: one engine, and one lock that serialises this process's writes.

    SQLite allows one writer at a time; taking the lock in-process keeps writers from waiting
    on the database's busy timeout. (Several processes on PostgreSQL rely on its transactions.)
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self.write_lock = threading.RLock()

    @classmethod
    def open(cls, settings: Settings) -> Store:
        """The store the settings name; the embedded default creates its data directory."""
        if settings.database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        return cls(create_store_engine(settings.resolved_database_url()))

    def session(self) -> Session:
        return Session(self.engine)

    def close(self) -> None:
        self.engine.dispose()
