"""SQL store: engine creation (SQLite in WAL mode by default, PostgreSQL by URL), the schema
migrations (Alembic, `memory_service/core/migrations`), and `Store`, the engine plus the write
lock that the service's parts share.

A store made before migrations existed (tables created directly, no `alembic_version`) is
adopted: it holds the first revision's schema, so it is stamped with it and upgraded from
there. On PostgreSQL the migration runs under a transaction-level advisory lock, so several
workers starting on one empty database migrate it once, one after the other.
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, event, inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql import access_tables, dir_lock, tables, text_guard  # noqa: F401 (tables)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
FIRST_REVISION = "0001"
# Any constant shared by every tunemem process: the key of the migration advisory lock.
ADVISORY_LOCK_KEY = 0x7475_6E65_6D65_6D  # "tunemem"
# SQLite memory-maps no part of the file: every pooled connection (up to 40) maps it on its
# own, and a map's pages count in the process's resident memory once per connection (at
# 100k lessons, 310 MB of a 119 MB file at concurrency 8). Reads go through the OS page
# cache instead, which is shared and not the process's.
SQLITE_MMAP_BYTES = 0


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration: our script folder, and the connection env.py migrates."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision in the migrations folder."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations folder has no revision"
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision a store is at (None: not under migrations yet, or empty)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> str | None:
    """Upgrade the store to `revision` (default the newest); returns the revision it was at.

    Runs in one transaction; on PostgreSQL that transaction first takes an advisory lock, so
    concurrent callers wait for each other and the later ones find nothing left to do.
    """
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY}
            )
        before = MigrationContext.configure(connection).get_current_revision()
        config = alembic_config(connection)
        if before is None and inspect(connection).has_table("lesson"):
            command.stamp(config, FIRST_REVISION)  # a store created before migrations
            before = FIRST_REVISION
        command.upgrade(config, revision)
    return before


def create_store_engine(url: str, *, migrate_schema: bool = True) -> Engine:
    """Create the engine and migrate the schema to the newest revision; SQLite gets WAL,
    foreign keys and a busy timeout."""
    if url.startswith("sqlite"):
        # As many connections as the HTTP thread pool runs requests (40), so that a burst of
        # concurrent requests does not queue on the pool (SQLite connections are cheap).
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=20,
            max_overflow=20,
            json_serializer=text_guard.json_serializer,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            cursor.close()

    else:
        engine = create_engine(
            url,
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=30,
            json_serializer=text_guard.json_serializer,
        )
    text_guard.install(engine)
    if migrate_schema:
        migrate(engine)
    return engine


class Store:
    """The SQL source of truth: one engine, and one lock that serialises this process's writes.

    SQLite allows one writer at a time; taking the lock in-process keeps writers from waiting
    on the database's busy timeout. (Several processes on PostgreSQL rely on its transactions.)
    """

    def __init__(self, engine: Engine, lease: dir_lock.DataDirLease | None = None):
        self.engine = engine
        self.write_lock = threading.RLock()
        self.lease = lease

    @classmethod
    def open(cls, settings: Settings, *, exclusive: bool = True) -> Store:
        """The store the settings name. The embedded default (SQLite or the Chroma index in the
        data directory) creates the directory and owns it: `dir_lock.DataDirInUse` when another
        process does. `exclusive=False` is for callers that touch only SQL tables and never
        the index (API keys): SQLite's WAL shares those safely between processes."""
        owns = exclusive and uses_data_dir(settings)
        if not owns and not settings.database_url:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        lease = dir_lock.acquire(settings.data_dir) if owns else None
        try:
            url = settings.resolved_database_url()
            return cls(create_store_engine(url, migrate_schema=settings.migrate_on_start), lease)
        except BaseException:
            if lease is not None:
                lease.release()
            raise

    def session(self) -> Session:
        return Session(self.engine)

    def advertise(self, url: str) -> None:
        """Tell processes refused the data directory which URL serves it."""
        if self.lease is not None:
            self.lease.advertise(url)

    def close(self) -> None:
        self.engine.dispose()
        if self.lease is not None:
            self.lease.release()


def uses_data_dir(settings: Settings) -> bool:
    """Whether the store keeps anything in the data directory (embedded SQLite or Chroma);
    server mode (a database URL and Chroma's server or the in-memory index) does not."""
    return not settings.database_url or settings.index == "chroma"
