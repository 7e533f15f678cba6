"""What every `tunemem` command shares: the consoles, the common options, settings, opening
the memory (embedded `MemoryService`, or `RemoteService` for `--url`) and error reporting."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from memory_service.core.errors import ServiceError
from memory_service.core.settings import Settings
from memory_service.protocol import MemoryAPI
from memory_service.remote import RemoteService

if TYPE_CHECKING:
    from memory_service.service import MemoryService

T = TypeVar("T")

console = Console()
err = Console(stderr=True)

UrlOpt = Annotated[
    str | None, typer.Option("--url", help="a running tunemem server; default: the embedded store")
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="embedded store directory (TUNEMEM_DATA_DIR)")
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option("--api-key", help="bearer key for the server given --url (TUNEMEM_API_KEY)"),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def settings_for(data_dir: Path | None = None, **overrides: Any) -> Settings:
    """The service settings (environment first), with the options given on the command line."""
    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)


def open_service(
    url: str | None, data_dir: Path | None = None, *, api_key: str | None = None
) -> MemoryAPI:
    """A MemoryService on the embedded store, or a RemoteService for --url.

    The remote one sends `api_key`, or else TUNEMEM_API_KEY, with every request.
    """
    if url:
        return RemoteService(url, api_key=api_key or settings_for(data_dir).api_key)
    from memory_service.service import MemoryService

    return MemoryService(settings_for(data_dir))


def open_local(data_dir: Path | None = None, **overrides: Any) -> MemoryService:
    """A MemoryService on the embedded (or configured) store, for commands with no --url."""
    from memory_service.service import MemoryService

    return MemoryService(settings_for(data_dir, **overrides))


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line and exit non-zero."""
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def run_guarded(fn: Callable[[], T]) -> T:
    """Run a command's body; a service error or bad value becomes one line and exit 2."""
    try:
        return fn()
    except ServiceError as exc:
        fail(f"{exc.code}: {exc.message}")
    except ValueError as exc:
        fail(str(exc))


def emit_json(data: Any) -> None:
    """Print `data` as pretty JSON on stdout."""
    console.print_json(json.dumps(data, default=str))
