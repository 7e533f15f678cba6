"""`tunemem values rebuild`, `tunemem reindex` (rebuild derived state from SQL) and
`tunemem migrate` (upgrade the SQL schema)."""

from __future__ import annotations

from typing import Annotated

import typer

from memory_service.cli.common import (
    DataDirOpt,
    UrlOpt,
    console,
    fail,
    open_service,
    run_guarded,
    settings_for,
)

values_app = typer.Typer(help="Lesson values (a view of the outcome log).", no_args_is_help=True)


@values_app.command("rebuild")
def values_rebuild(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Recompute every lesson value from the append-only outcome log."""
    n = run_guarded(lambda: open_service(url, data_dir).rebuild_values())
    console.print(f"rebuilt values from {n} outcomes")


def reindex(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Rebuild the vector index from the SQL store."""
    n = run_guarded(lambda: open_service(url, data_dir).reindex())
    console.print(f"indexed {n} lessons")


def migrate_cmd(
    data_dir: DataDirOpt = None,
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Upgrade the SQL store's schema (TUNEMEM_DATABASE_URL, or the embedded store)."""
    # Imported here: alembic and SQLAlchemy cost every other command seconds of start-up.
    from alembic.util.exc import CommandError

    from memory_service.core.sql.store import create_store_engine, current_revision, migrate

    settings = settings_for(data_dir)
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(settings.resolved_database_url(), migrate_schema=False)
    try:
        before = migrate(engine, revision)
        now = current_revision(engine)
    except CommandError as exc:
        fail(f"migrate: {exc}")
    finally:
        engine.dispose()
    if before == now:
        console.print(f"the store is at revision {now}: nothing to do")
    else:
        console.print(f"migrated the store from revision {before or '(empty)'} to {now}")
