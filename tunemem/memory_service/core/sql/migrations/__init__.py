"""Alembic migrations of the SQL store: `env.py` runs them on a connection that
`memory_service.core.sql.store.migrate` hands over; `versions/` holds one file per revision.

The API promises that fields are added, never renamed, and server mode holds data that
matters, so every change to `memory_service.core.sql.tables` (or `auth`) comes with a revision:
`tests/memory_service/core/sql/test_core_migrations.py` fails while the migrated schema and the
tables differ. To write one, change the table class, then from the repository root run
`python -m tunemem.memory_service.core.sql.migrations "what changed"`, read the generated file, and
keep
what it should do.
"""
