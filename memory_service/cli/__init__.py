"""The `tunemem` command line: thin commands over MemoryService (or a server with --url).

Every command works against the embedded store in TUNEMEM_DATA_DIR (default ./.tunemem), or
against a running server when given --url. Errors print one line and exit non-zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from memory_service.errors import ServiceError

app = typer.Typer(
    help="tunemem: value-driven memory for kernel-tuning agents.", no_args_is_help=True
)
lessons_app = typer.Typer(help="List, show, add and archive lessons.", no_args_is_help=True)
values_app = typer.Typer(help="Lesson values (a view of the outcome log).", no_args_is_help=True)
app.add_typer(lessons_app, name="lessons")
app.add_typer(values_app, name="values")

console = Console()
err = Console(stderr=True)

UrlOpt = Annotated[
    str | None, typer.Option("--url", help="a running tunemem server; default: the embedded store")
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="embedded store directory (TUNEMEM_DATA_DIR)")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def settings_for(data_dir: Path | None = None, **overrides: Any) -> Any:
    from memory_service.settings import Settings

    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)


def open_service(url: str | None, data_dir: Path | None = None) -> Any:
    """A MemoryService on the embedded store, or a RemoteService for --url."""
    if url:
        from memory_service.cli.remote import RemoteService

        return RemoteService(url, api_key=settings_for(data_dir).api_key)
    from memory_service.service import MemoryService

    return MemoryService(settings_for(data_dir))


def fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def run_guarded(fn: Any) -> Any:
    try:
        return fn()
    except ServiceError as exc:
        fail(f"{exc.code}: {exc.message}")
    except ValueError as exc:
        fail(str(exc))


def emit_json(data: Any) -> None:
    console.print_json(json.dumps(data, default=str))


# ------------------------------------------------------------------ serve
@app.command()
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

    from memory_service.api import create_app
    from memory_service.service import MemoryService

    service = MemoryService(settings_for(data_dir))
    if seed or service.settings.seed_samples:
        seed_samples(service)
    err.print(f"tunemem serving on http://{host}:{port} (data: {service.settings.data_dir})")
    uvicorn.run(create_app(service), host=host, port=port, log_level="info")


def seed_samples(service: Any) -> None:
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


# --------------------------------------------------------------- retrieve
@app.command()
def retrieve(
    op: Annotated[
        str | None, typer.Option(help="operator family, e.g. softmax, convolution")
    ] = None,
    chip: Annotated[str | None, typer.Option(help="target chip name, e.g. H200, MI250X")] = None,
    backend: Annotated[
        str | None, typer.Option(help="target backend when no chip is given")
    ] = None,
    stage: Annotated[str, typer.Option(help="draft or refine")] = "draft",
    query: Annotated[str, typer.Option("--query", "-q", help="free text")] = "",
    signature: Annotated[str | None, typer.Option(help='JSON object, e.g. {"N": 4096}')] = None,
    dtype: Annotated[str | None, typer.Option(help="dtype, e.g. bf16")] = None,
    model: Annotated[str | None, typer.Option(help="model name")] = None,
    scenario: Annotated[str | None, typer.Option(help="prefill, decode, training ...")] = None,
    k: Annotated[int | None, typer.Option(help="lessons to return")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="value weight override")] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask for the lessons that apply to a task in a context."""
    from memory_service.models import RetrieveRequest

    try:
        sig = json.loads(signature) if signature else {}
    except json.JSONDecodeError as exc:
        fail(f"--signature is not JSON: {exc}")

    def go() -> None:
        request = RetrieveRequest(
            query=query,
            task={"op": op, "signature": sig, "dtype": dtype},
            context={"chip": chip, "backend": backend, "model": model, "scenario": scenario},
            stage=stage,  # type: ignore[arg-type]
            k=k,
            options={"lam": lam},
        )
        result = open_service(url, data_dir).retrieve(request)
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        console.print(
            f"retrieval [bold]{result.retrieval_id}[/bold]"
            f"  scopes: {' → '.join(result.scope_chain)}"
        )
        table = Table("#", "kind", "lesson", "score", "sim", "value (scope, n)", "explore")
        for i, lesson in enumerate(result.lessons, 1):
            b = lesson.breakdown
            text = lesson.rendered_text or lesson.text
            flags = (" [transferred]" if lesson.transferred else "") + (
                " [avoid]" if lesson.warning else ""
            )
            table.add_row(
                str(i),
                lesson.kind,
                text[:160] + flags,
                f"{lesson.score:.2f}",
                f"{b.similarity:.2f}",
                f"{b.value:+.2f} ({b.value_scope}, {b.n})",
                f"{b.exploration:.2f}",
            )
        console.print(table)

    run_guarded(go)


# ----------------------------------------------------------------- report
@app.command()
def report(
    retrieval_id: Annotated[str, typer.Argument(help="the id a retrieve returned")],
    compiled: Annotated[bool, typer.Option("--compiled/--not-compiled")] = True,
    correct: Annotated[bool | None, typer.Option("--correct/--incorrect")] = None,
    latency_ms: Annotated[float | None, typer.Option(help="measured latency")] = None,
    best_before_ms: Annotated[
        float | None, typer.Option(help="best latency before this attempt")
    ] = None,
    error: Annotated[str | None, typer.Option(help="error text")] = None,
    used: Annotated[
        list[str] | None,
        typer.Option("--used", help="lesson ids used (repeat); default all returned"),
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="makes a retried report count once")
    ] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Report what happened after an attempt; credited lessons' values move."""
    from memory_service.models import ReportRequest

    def go() -> None:
        request = ReportRequest(
            retrieval_id=retrieval_id,
            used=used or None,
            outcome={
                "compiled": compiled,
                "correct": correct,
                "latency_ms": latency_ms,
                "best_before_ms": best_before_ms,
                "error": error,
            },
        )
        result = open_service(url, data_dir).report(request, idempotency_key=idempotency_key)
        emit_json(result.model_dump(mode="json"))

    run_guarded(go)


# ---------------------------------------------------------------- lessons
@lessons_app.command("list")
def lessons_list(
    kind: Annotated[str | None, typer.Option()] = None,
    backend: Annotated[str | None, typer.Option()] = None,
    chip: Annotated[str | None, typer.Option()] = None,
    op: Annotated[str | None, typer.Option()] = None,
    q: Annotated[str | None, typer.Option("--q", help="text contains")] = None,
    status: Annotated[str, typer.Option(help="active, archived or all")] = "active",
    limit: Annotated[int, typer.Option()] = 20,
    offset: Annotated[int, typer.Option()] = 0,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List lessons with filters and paging."""

    def go() -> None:
        result = open_service(url, data_dir).list_lessons(
            kind=kind,
            backend=backend,
            chip=chip,
            op=op,
            q=q,
            status=status,
            limit=limit,
            offset=offset,
        )
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        table = Table("id", "kind", "op", "chips", "text", title=f"{result.count} lessons match")
        for lesson in result.data:
            a = lesson.applicability
            table.add_row(
                lesson.id[:8], lesson.kind, a.op or "*", ",".join(a.chips) or "*", lesson.text[:110]
            )
        console.print(table)

    run_guarded(go)


@lessons_app.command("show")
def lessons_show(
    lesson_id: str,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    history: Annotated[
        bool, typer.Option("--history", help="include the outcomes behind the values")
    ] = False,
) -> None:
    """Show one lesson with its values per stage and scope."""

    def go() -> None:
        svc = open_service(url, data_dir)
        data = svc.get_lesson(lesson_id).model_dump(mode="json")
        if history:
            data["history"] = svc.lesson_history(lesson_id).model_dump(mode="json")["outcomes"]
        emit_json(data)

    run_guarded(go)


@lessons_app.command("archive")
def lessons_archive(lesson_id: str, url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Archive a lesson (kept with its history, no longer retrieved)."""
    run_guarded(
        lambda: emit_json(
            open_service(url, data_dir).archive_lesson(lesson_id).model_dump(mode="json")
        )
    )


@lessons_app.command("add")
def lessons_add(
    file: Annotated[
        Path, typer.Argument(help='JSON file: {"lessons": [...]} as POST /v1/lessons takes')
    ],
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Add lessons from a JSON file (idempotent)."""
    from pydantic import ValidationError

    from memory_service.models import LessonsCreate

    try:
        body = LessonsCreate(**json.loads(file.read_text()))
    except (OSError, json.JSONDecodeError, ValidationError, TypeError) as exc:
        fail(f"{file}: {exc}")
    run_guarded(
        lambda: emit_json(open_service(url, data_dir).add_lessons(body.lessons).model_dump())
    )


# ----------------------------------------------------------------- values
@values_app.command("rebuild")
def values_rebuild(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Recompute every lesson value from the append-only outcome log."""
    n = run_guarded(lambda: open_service(url, data_dir).rebuild_values())
    console.print(f"rebuilt values from {n} outcomes")


@app.command()
def reindex(url: UrlOpt = None, data_dir: DataDirOpt = None) -> None:
    """Rebuild the vector index from the SQL store."""
    n = run_guarded(lambda: open_service(url, data_dir).reindex())
    console.print(f"indexed {n} lessons")


@app.command("export")
def export_cmd(
    path: Annotated[Path, typer.Argument(help="bundle to write (.jsonl or .jsonl.gz)")],
    data_dir: DataDirOpt = None,
) -> None:
    """Export lessons, runs, retrievals and the outcome log of the embedded store."""
    counts = run_guarded(lambda: open_service(None, data_dir).export(path))
    console.print(f"exported {counts} to {path}")


@app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="bundle written by `tunemem export`")],
    data_dir: DataDirOpt = None,
) -> None:
    """Import a bundle into the embedded store (idempotent); values are rebuilt from its log."""
    if not path.exists():
        fail(f"no such file: {path}")
    counts = run_guarded(lambda: open_service(None, data_dir).import_bundle(path))
    console.print(f"imported {counts}")


def _register_optional() -> None:
    """Commands whose modules live beside this one."""
    from memory_service.cli import bench, ingest_cmd, keys_cmd, mcp_cmd

    app.command(name="ingest")(ingest_cmd.ingest)
    app.command(name="mcp")(mcp_cmd.mcp)
    app.add_typer(bench.bench_app, name="bench")
    app.add_typer(keys_cmd.keys_app, name="keys")
    from memory_service.cli.audit_cmd import audit_app

    app.add_typer(audit_app, name="audit")
    try:
        from memory_service.cli import agent_cmd
    except ImportError:  # pragma: no cover - agent extras missing
        return
    app.add_typer(agent_cmd.agent_app, name="agent")


_register_optional()


def main() -> None:
    app(prog_name="tunemem")


if __name__ == "__main__":  # pragma: no cover
    main()
