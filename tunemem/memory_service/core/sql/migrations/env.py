"""Alembic's environment: run the migrations on the connection `store.migrate` passes in.

There is no alembic.ini and no offline (SQL script) mode: the store always migrates a live
connection, inside the transaction (and, on PostgreSQL, the advisory lock) its caller holds.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from tunemem.memory_service.core.sql import access_tables, tables  # noqa: F401  (registers the tables)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=True,  # SQLite alters a table by copying it; batch mode does that
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
