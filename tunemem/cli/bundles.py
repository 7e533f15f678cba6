"""`tunemem export` and `tunemem import`: a tenant's data as one JSON Lines bundle, from and
into the embedded store or, with --url, a running server (its admin export/import routes)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    UrlOpt,
    console,
    err,
    fail,
    open_service,
    run_guarded,
    with_heartbeat,
)


def counts_text(counts: Mapping[str, object]) -> str:
    """`{'lesson': 816, 'trajectory': 2}` as `816 lessons, 2 trajectories`: counts in words."""
    plural = {"trajectory": "trajectories"}
    return ", ".join(
        f"{n} {kind if n == 1 else plural.get(kind, kind + 's')}" for kind, n in counts.items()
    )


TenantOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        help="the tenant to move (default: TUNEMEM_TENANT, or with --url the key's tenant)",
    ),
]


def export_cmd(
    path: Annotated[Path, typer.Argument(help="bundle to write (.jsonl or .jsonl.gz)")],
    tenant: TenantOpt = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Export a tenant's lessons, runs, retrievals and outcome log."""
    with run_guarded(lambda: open_service(url, data_dir, api_key=api_key)) as service:
        counts = with_heartbeat(
            "exporting", lambda: run_guarded(lambda: service.export(path, tenant=tenant))
        )
    console.print(f"exported {counts_text(counts)} to {path}")


def import_cmd(
    path: Annotated[Path, typer.Argument(help="bundle written by `tunemem export`")],
    tenant: TenantOpt = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Import a bundle into a tenant (idempotent); values are rebuilt from its outcome log."""
    if not path.exists():
        fail(f"no such file: {path}")
    with run_guarded(lambda: open_service(url, data_dir, api_key=api_key)) as service:
        err.print(
            f"importing {path} (its lessons are embedded and indexed, its values rebuilt) ..."
        )
        counts = with_heartbeat(
            "importing", lambda: run_guarded(lambda: service.import_bundle(path, tenant=tenant))
        )
    console.print(f"imported {counts_text(counts)}")
