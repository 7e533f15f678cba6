"""`tunemem values rebuild`, `tunemem reindex` (rebuild derived state from SQL),
`tunemem doctor` (repair stored records the door now refuses) and `tunemem migrate` (upgrade the
SQL schema)."""

from __future__ import annotations

from typing import Annotated

import typer

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    UrlOpt,
    console,
    fail,
    open_local,
    open_service,
    run_guarded,
    settings_for,
)

values_app = typer.Typer(help="Lesson values (a view of the outcome log).", no_args_is_help=True)


MaintainedOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        help="only this tenant (default: every tenant; with --url the key's, an operator's all)",
    ),
]


@values_app.command("rebuild")
def values_rebuild(
    tenant: MaintainedOpt = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Recompute every lesson value from the append-only outcome log."""

    def go() -> int:
        with open_service(url, data_dir, api_key=api_key) as memory:
            return memory.rebuild_values(tenant)

    console.print(f"rebuilt values from {run_guarded(go)} outcomes")


def reindex(
    tenant: MaintainedOpt = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Rebuild the vector index from the SQL store."""

    def go() -> int:
        with open_service(url, data_dir, api_key=api_key) as memory:
            return memory.reindex(tenant=tenant)

    console.print(f"indexed {run_guarded(go)} lessons")


def doctor(
    data_dir: DataDirOpt = None,
    fix: Annotated[bool, typer.Option("--fix", help="repair what is found")] = False,
    tenant: Annotated[str | None, typer.Option(help="the tenant (default: the store's)")] = None,
) -> None:
    """Find stored lesson hints, run attempts and outcomes the door now refuses (a value that is
    not JSON, a list where a value goes, a statistic or latency that is no usable number, a
    reward outside -1..1), each named by its row; --fix repairs them."""
    report = run_guarded(lambda: open_local(data_dir).doctor(fix, tenant=tenant))
    for line in report.lessons + report.attempts + report.outcomes:
        console.print(line, markup=False, highlight=False)
    counts = (
        f"{len(report.lessons)} lesson(s), {len(report.attempts)} attempt(s) and "
        f"{len(report.outcomes)} outcome(s)"
    )
    if not report.problems:
        console.print("the store holds no unusable hint, attempt or outcome")
    elif fix:
        console.print(f"repaired {counts}")
    else:
        console.print(f"{counts} to repair: run tunemem doctor --fix")
        raise typer.Exit(1)


def migrate_cmd(
    data_dir: DataDirOpt = None,
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Upgrade the SQL store's schema (TUNEMEM_DATABASE_URL, or the embedded store)."""
    # Imported here: alembic and SQLAlchemy cost every other command seconds of start-up.
    from alembic.util.exc import CommandError

    from tunemem.memory_service.core.sql.store import create_store_engine, current_revision, migrate

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
