"""`python -m tunemem.memory_service.core.sql.migrations "message"`: write the next revision file.

It migrates a scratch SQLite store to the newest revision and lets Alembic compare it with
the table classes; the new file in versions/ holds the difference, to be read and corrected
by hand (Alembic cannot tell a rename from a drop and an add; the API never renames).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from tunemem.memory_service.core.sql.store import alembic_config, migrate


def main(message: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tunemem-revision-") as scratch:
        engine = create_engine(f"sqlite:///{Path(scratch) / 'scratch.db'}")
        scripts = ScriptDirectory.from_config(alembic_config())
        if scripts.get_current_head() is not None:
            migrate(engine)
        number = f"{len(list(scripts.walk_revisions())) + 1:04d}"
        with engine.begin() as connection:
            command.revision(
                alembic_config(connection), message=message, autogenerate=True, rev_id=number
            )
        engine.dispose()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit('usage: python -m tunemem.memory_service.core.sql.migrations "what changed"')
    main(sys.argv[1])
