"""`tunemem serve`: the HTTP API on the embedded store, optionally seeded with sample data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memory_service.cli.common import DataDirOpt, err, open_local

if TYPE_CHECKING:
    from memory_service.service import MemoryService


def serve(
    host: Annotated[str, typer.Option(help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    data_dir: DataDirOpt = None,
    seed: Annotated[
        bool,
        typer.Option("--seed/--no-seed", help="ingest the bundled sample data into an empty store"),
    ] = False,
) -> None:
    """Start the HTTP API (OpenAPI at /docs) on the embedded store."""
    import uvicorn

    from memory_service.http.app import create_app

    service = open_local(data_dir)
    if seed or service.settings.seed_samples:
        seed_samples(service)
    local_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    bracketed = f"[{local_host}]" if ":" in local_host else local_host
    service.store.advertise(f"http://{bracketed}:{port}")  # named to processes it refuses
    err.print(f"tunemem serving on http://{host}:{port} (data: {service.settings.data_dir})")
    uvicorn.run(create_app(service), host=host, port=port, log_level="info")


def seed_samples(service: MemoryService) -> None:
    """Ingest the bundled sample data once, into a store that has no trajectories yet."""
    if service.counts()["trajectories"] > 0:
        return
    from ingest.readers import read_any
    from ingest.samples import sample_paths

    err.print("seeding the empty store with the bundled sample data ...")
    summary = service.ingest(read_any(sample_paths()))
    err.print(
        f"seeded: {summary.added} trajectories, {summary.attempts} attempts, "
        f"{summary.lessons_added} lessons"
    )
