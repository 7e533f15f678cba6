"""One module per schema revision; Alembic reads `revision` and `down_revision` from each."""
