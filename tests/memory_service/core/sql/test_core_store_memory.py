"""The SQLite store's memory: its pooled connections do not map the database file (each
connection's map would count in the process's resident memory again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from tunemem.memory_service.core.sql.store import create_store_engine


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_pooled_sqlite_connections_map_none_of_the_database_file(tmp_path: Path) -> None:
    database = tmp_path / "store.db"
    engine = create_store_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)"))
        connection.execute(
            text("INSERT INTO filler (body) VALUES (:body)"),
            [{"body": "x" * 4000} for _ in range(500)],
        )
    connections = [engine.connect() for _ in range(4)]  # held at once: four pooled connections
    try:
        for connection in connections:
            assert connection.execute(text("SELECT count(*) FROM filler")).scalar() == 500
            assert connection.execute(text("SELECT sum(length(body)) FROM filler")).scalar()
            assert connection.execute(text("PRAGMA mmap_size")).scalar() == 0
        mapped = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()}
        assert str(database) not in mapped  # (the WAL index, store.db-shm, is mapped: small)
    finally:
        for connection in connections:
            connection.close()
        engine.dispose()
