"""`tunemem serve`: the HTTP API on the embedded store, optionally seeded with sample data."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Annotated

import typer

from tunemem.cli.common import DataDirOpt, err, fail, open_local, settings_for

if TYPE_CHECKING:
    from tunemem.memory_service.core.sql.dir_lock import DataDirInUse
    from tunemem.memory_service.service import MemoryService


def serve(
    host: Annotated[str, typer.Option(help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    data_dir: DataDirOpt = None,
    seed: Annotated[
        bool,
        typer.Option("--seed/--no-seed", help="ingest the bundled sample data into an empty store"),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="API worker processes; more than one needs the server mode "
            "(TUNEMEM_DATABASE_URL and TUNEMEM_INDEX=chroma-http)",
        ),
    ] = 1,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", help="log every request")
    ] = False,
) -> None:
    """Start the HTTP API (OpenAPI at /docs) on the embedded store, or on the server mode's."""
    import uvicorn

    # uvloop and httptools when installed (uvicorn's "auto" picks them), no per-request log
    # line unless asked: /metrics counts requests.
    # A stop (SIGTERM, Ctrl-C) waits for requests in flight at most this long: each suggest is
    # bounded by its deadline, so they are done well before.
    options = dict(
        host=host,
        port=port,
        log_level="info",
        access_log=access_log,
        timeout_graceful_shutdown=30,
        # A connection that sends no request head within HEAD_TIMEOUT_S is closed.
        http="tunemem.memory_service.http.head_timeout:HeadTimeoutProtocol",
    )
    if workers > 1:
        settings = settings_for(data_dir)
        if settings.database_url is None or settings.index != "chroma-http":
            fail(
                "--workers > 1 needs the server mode: an embedded store (SQLite file, Chroma "
                "directory) has one owning process; set TUNEMEM_DATABASE_URL and "
                "TUNEMEM_INDEX=chroma-http with TUNEMEM_INDEX_URL"
            )
        if seed or settings.seed_samples:
            with open_local(data_dir) as seeding:
                seed_samples(seeding)
        if data_dir is not None:  # each worker builds its settings from the environment
            os.environ["TUNEMEM_DATA_DIR"] = str(data_dir)
        # Workers share the cores: a worker's lone MiniLM pass takes its share, not all.
        share = max(1, (os.cpu_count() or 1) // workers)
        os.environ.setdefault("TUNEMEM_EMBED_THREADS", str(share))
        err.print(f"tunemem serving on http://{host}:{port} ({workers} workers, server mode)")
        uvicorn.run(
            "tunemem.memory_service.http.app:app_from_environment",
            factory=True,
            workers=workers,
            **options,  # type: ignore[arg-type]
        )
        return

    from tunemem.memory_service.core.sql.dir_lock import DataDirInUse
    from tunemem.memory_service.http.app import create_app
    from tunemem.memory_service.service import MemoryService

    try:
        service = MemoryService(settings_for(data_dir))
    except DataDirInUse as exc:
        fail(refusal_to_serve(exc), code=1)
    if seed or service.settings.seed_samples:
        seed_samples(service)
    # SQL is written before the index: a crash between the two is mended here, before serving.
    fixed = service.repair_index()
    if fixed["added"] or fixed["removed"]:
        err.print(f"index repaired: {fixed['added']} lessons added, {fixed['removed']} dropped")
    warm_up(service)
    local_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    bracketed = f"[{local_host}]" if ":" in local_host else local_host
    service.store.advertise(f"http://{bracketed}:{port}")  # named to processes it refuses
    err.print(f"tunemem serving on http://{host}:{port} (data: {service.settings.data_dir})")
    app = create_app(service)
    freeze_startup_heap()
    with service:
        uvicorn.run(app, **options)  # type: ignore[arg-type]


def refusal_to_serve(exc: DataDirInUse) -> str:
    """Why `serve` cannot open a store another process owns, and what to do instead: `serve`
    has no --url, so the advice of the other commands (go through the owner) does not fit."""
    who = f"process {exc.pid}" if exc.pid else "another process"
    if exc.url:
        return (
            f"the embedded store {exc.data_dir} is in use: {who} already serves it on "
            f"{exc.url}; use that server (its address is the one your tools and commands "
            f"take), stop it, or serve another store with --data-dir DIR"
        )
    return f"{exc}; or serve another store with --data-dir DIR"


def warm_up(service: MemoryService) -> None:
    """One embedding and one index query before serving: the model's inference session and
    the index's files load at their first use, which made the first retrieve of a warm
    `make run` take 16.5 s. A warm-up that fails only says so: the first request will load
    them instead."""
    started = time.monotonic()
    try:
        vector = service.embedder.embed(["warm-up: tile sizes of a kernel on a GPU"])[0]
        service.index.query(vector, 1, service.settings.tenant)
    except Exception as exc:  # noqa: BLE001 - serving must not depend on the warm-up
        err.print(f"warm-up failed ({exc}); the first request loads the model instead")
        return
    err.print(f"model and index loaded ({time.monotonic() - started:.1f} s)")


def freeze_startup_heap() -> None:
    """Move everything alive after start-up (the model's runtime, the index client, the schemas:
    ~180k objects) out of the collector's reach: a full collection over them paused every
    request in flight for ~110 ms about once in 300 retrieve + report pairs at 100k lessons."""
    import gc

    gc.collect()
    gc.freeze()


def seed_samples(service: MemoryService) -> None:
    """Ingest the bundled sample data once, into a store that has no trajectories yet."""
    if service.counts()["trajectories"] > 0:
        return
    from tunemem.ingest.readers import read_any
    from tunemem.ingest.samples import sample_paths

    err.print("seeding the empty store with the bundled sample data ...")
    started = last = time.monotonic()
    read = 0

    def progress(_record: object) -> None:
        nonlocal read, last
        read += 1
        now = time.monotonic()
        if now - last >= 3.0:  # a line every few seconds: the first start is never silent
            err.print(f"  seeding: {read} runs read ({now - started:.0f} s)")
            last = now

    summary = service.ingest(read_any(sample_paths()), progress=progress)
    err.print(
        f"seeded: {summary.added} trajectories, {summary.attempts} attempts, "
        f"{summary.lessons_added} lessons"
    )
