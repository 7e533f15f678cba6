"""`tunemem keys`: create, list and revoke API keys of the embedded or configured store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from tunemem.cli.common import DataDirOpt, console, run_guarded, settings_for

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from tunemem.memory_service.core.settings import Settings

# The store's modules (SQLAlchemy, alembic) are imported by the commands that use them: every
# `tunemem` command, one through --url included, loads this module, and they cost seconds.

keys_app = typer.Typer(
    help="API keys (bearer tokens with a role and a tenant).", no_args_is_help=True
)


def _engine(data_dir: Path | None) -> tuple[Engine, Settings]:
    """The store's engine (keys need no embedder or index, so no whole service is opened, and
    keys can be made while `tunemem serve` owns the data directory)."""
    from tunemem.memory_service.core.sql.store import Store

    settings = settings_for(data_dir)
    return Store.open(settings, exclusive=False).engine, settings


@keys_app.command("create")
def keys_create(
    role: Annotated[str, typer.Option(help="reader, agent, admin or operator")] = "agent",
    tenant: Annotated[str | None, typer.Option(help="tenant the key may see")] = None,
    name: Annotated[str, typer.Option(help="a label for the key")] = "",
    data_dir: DataDirOpt = None,
) -> None:
    """Create a key; its secret is printed once (only a hash is stored)."""
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import create_key

    engine, settings = _engine(data_dir)

    def go() -> None:
        with Session(engine) as session:
            row, secret = create_key(session, role, tenant or settings.tenant, name)
        console.print(f"key {row.id} ({row.role}, tenant {row.tenant}): {secret}")
        console.print("store it now: it cannot be shown again")

    run_guarded(go)


@keys_app.command("list")
def keys_list(data_dir: DataDirOpt = None) -> None:
    """List keys (ids, roles, tenants; never the secrets)."""
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import list_keys

    engine, _ = _engine(data_dir)
    table = Table("id", "role", "tenant", "name", "created", "revoked")
    with Session(engine) as session:
        for row in list_keys(session):
            table.add_row(
                row.id, row.role, row.tenant, row.name, str(row.created_at), str(row.revoked)
            )
    console.print(table)


@keys_app.command("revoke")
def keys_revoke(key_id: str, data_dir: DataDirOpt = None) -> None:
    """Revoke a key; requests with it get 401 from then on (the store stays keyed)."""
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import revoke_key

    engine, _ = _engine(data_dir)

    def go() -> None:
        with Session(engine) as session:
            row = revoke_key(session, key_id)
        console.print(f"revoked {row.id}")

    run_guarded(go)


@keys_app.command("open")
def keys_open(data_dir: DataDirOpt = None) -> None:
    """Open a keyed store to keyless local clients again (refused while a key is live).

    A store that has had keys stays keyed when they are all revoked; this is the one way back.
    """
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import open_store

    engine, _ = _engine(data_dir)

    def go() -> None:
        with Session(engine) as session:
            open_store(session)
        console.print("the store is open: loopback clients without a key act as operator")

    run_guarded(go)
