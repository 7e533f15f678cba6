"""Fresh PostgreSQL databases, for the server-mode cases of the SQL store.

They need a server (TUNEMEM_TEST_PG_URL, default
postgresql+psycopg://postgres@127.0.0.1:5432/postgres; `.ci/run` starts one) and skip with the
reason without one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

PG_URL = os.environ.get(
    "TUNEMEM_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture
def new_pg_database() -> Iterator[Callable[[], str]]:
    """A factory of empty databases on the test server (each call a new one, its URL), all
    dropped afterwards; the test skips when the server is not reachable."""
    try:
        import psycopg

        admin = psycopg.connect(PG_URL.replace("+psycopg", ""), autocommit=True, connect_timeout=2)
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        pytest.skip(f"PostgreSQL not reachable at {PG_URL}: {exc.__class__.__name__}")
    made: list[str] = []

    def create() -> str:
        name = f"tunemem_test_{uuid.uuid4().hex[:10]}"
        admin.execute(f"CREATE DATABASE {name}")
        made.append(name)
        return f"{PG_URL.rsplit('/', 1)[0]}/{name}"

    try:
        yield create
    finally:
        for name in made:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()


@pytest.fixture
def empty_pg_database(new_pg_database: Callable[[], str]) -> str:
    """The URL of one empty database on the test server."""
    return new_pg_database()
