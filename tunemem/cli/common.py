"""What every `tunemem` command shares: the consoles, the common options, settings, opening
the memory (embedded `MemoryService`, or `RemoteService` for `--url`) and error reporting."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.core.sql.dir_lock import DataDirInUse
from tunemem.memory_service.protocol import MemoryAPI
from tunemem.memory_service.remote import RemoteService

if TYPE_CHECKING:
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

# A command through --url imports only the HTTP client and the API models: the store's
# modules (SQLAlchemy, alembic, the embedder) and pydantic-settings are imported by the
# functions that open a store, since they cost a remote command seconds of start-up.

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _console(stream: Any, stderr: bool = False) -> Console:
    """A console that never wraps what it prints (soft wrap) and, when its stream is not a
    terminal (a pipe, a file, a test), lays tables out as wide as their content instead of 80
    columns: a printed key, id or path is always on one line, whole."""
    wide = None if stream.isatty() else 1000
    return Console(stderr=stderr, soft_wrap=True, width=wide)


console = _console(sys.stdout)
err = _console(sys.stderr, stderr=True)

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
StageOpt = Annotated[Stage, typer.Option(help="draft or refine")]


def settings_for(data_dir: Path | None = None, **overrides: Any) -> Settings:
    """The service settings (environment first), with the options given on the command line."""
    from tunemem.memory_service.core.settings import Settings

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
        return RemoteService(url, api_key=api_key or environment_api_key())
    return open_local(data_dir)


def with_memory(
    fn: Callable[[MemoryAPI], T],
    url: str | None,
    data_dir: Path | None = None,
    *,
    api_key: str | None = None,
) -> T:
    """Open the memory (`open_service`), run a command's body on it and close it, also when
    the body fails; a service error or bad value becomes one line and exit 2."""

    def go() -> T:
        with open_service(url, data_dir, api_key=api_key) as memory:
            return fn(memory)

    return run_guarded(go)


def environment_api_key() -> str | None:
    """`Settings().api_key` without building the settings: TUNEMEM_API_KEY, its name matched
    in any case as pydantic-settings matches it (tests hold the two to the same answer)."""
    for name, value in os.environ.items():
        if name.upper() == "TUNEMEM_API_KEY" and value:
            return value
    return None


def open_local(data_dir: Path | None = None, **overrides: Any) -> MemoryService:
    """A MemoryService on the embedded (or configured) store, for commands with no --url.

    A data directory another process owns (a running `tunemem serve`, say) is refused with
    one line naming that process and the --url to use instead."""
    from tunemem.memory_service.service import MemoryService

    try:
        return MemoryService(settings_for(data_dir, **overrides))
    except DataDirInUse as exc:
        fail(str(exc), code=1)


def clip(text: str, width: int) -> str:
    """The text on one line, whole if it fits, else cut at a word and ended with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def terms_text(terms: dict[str, float], top: int = 3) -> str:
    """An estimate's heaviest terms with their shares: `own:chip:w6600 55%, prior 30%, +2`."""
    ranked = sorted(terms.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name} {share:.0%}" for name, share in ranked[:top])
    return shown + (f", +{len(ranked) - top}" if len(ranked) > top else "")


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


def with_heartbeat(label: str, fn: Callable[[], T], every: float = 5.0) -> T:
    """Run `fn`, printing `... still <label> (N s)` on stderr every `every` seconds until it
    returns: a long step that cannot count its own progress (an import over HTTP, say) is
    never silent."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            err.print(f"  ... still {label} ({time.monotonic() - started:.0f} s)")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        return fn()
    finally:
        done.set()
        thread.join()


def request_from(model: type[M], **fields: Any) -> M:
    """The request or query model of a command's options; a value the model refuses is one
    line naming the option's field, as the HTTP API words it, and exit 2."""
    try:
        return model(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "options"
        code = first["type"] if first["type"].startswith("invalid_") else "invalid_request"
        fail(f"{code}: {where}: {first['msg']}")


def emit_json(data: Any) -> None:
    """Print `data` as pretty JSON on stdout."""
    console.print_json(json.dumps(data, default=str))
