"""The source of truth: the SQL store (SQLite or PostgreSQL), its tables, migrations, the lock
of the data directory."""
