"""`tunemem capture -- COMMAND...`: run a program with its Triton autotunes captured.

As `opentelemetry-instrument` wraps a program: the command runs in place of this one (same
process id, its own argv, its exit code), with the capture's `sitecustomize` folder first on
PYTHONPATH and the memory's address in `TUNEMEM_CAPTURE_URL`, so every Python process it
starts (a server's workers too) captures its Triton autotunes into the memory
(`agent_client.tuners.triton.capture`). Nothing about the program changes otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer

from tunemem.cli.common import err

SITE = Path(__file__).resolve().parents[1] / "agent_client" / "tuners" / "triton" / "capture_site"


def capture(
    command: Annotated[
        list[str] | None, typer.Argument(help="the program and its arguments, after --")
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", envvar="TUNEMEM_URL", help="the memory's address")
    ] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TUNEMEM_API_KEY")] = None,
) -> None:
    """Run COMMAND with every Triton autotune it does sent to the memory (in the background;
    the program runs as usual when the memory is away)."""
    if not command:
        err.print("error: give the program to run after --, e.g. tunemem capture -- python app.py")
        raise typer.Exit(2)
    if not url:
        err.print("error: give the memory's address with --url (or TUNEMEM_URL)")
        raise typer.Exit(2)
    if not url.startswith(("http://", "https://")):
        err.print(f"error: --url must be an http:// or https:// address, not {url!r}")
        raise typer.Exit(2)
    program = shutil.which(command[0])
    if program is None:
        err.print(f"error: {command[0]!r} is not a program on PATH")
        raise typer.Exit(2)
    env = dict(os.environ)
    env["TUNEMEM_CAPTURE_URL"] = url
    if api_key:
        env["TUNEMEM_CAPTURE_API_KEY"] = api_key
    paths = [str(SITE), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    os.execvpe(program, command, env)
