"""Exclusive ownership of an embedded data directory: one process at a time opens it.

Two processes writing one embedded Chroma directory is how Chroma stores get corrupted
(chroma#7040, #3792), and DESIGN section 3 says one process owns an embedded store; this
makes that hold. The owner takes an exclusive `flock` on `<data dir>/owner.lock` and keeps it
while it runs (the kernel drops it when the process dies, however it dies), and writes into
the file who it is: its pid, its command and, once `tunemem serve` listens, its URL. Another
process is refused with `DataDirInUse`, whose message names the owner's pid and the `--url`
to use instead. Within one process the lock is shared: services opened on the same directory
(a server and a command run in the same test process) hold it together until the last closes.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

LOCK_NAME = "owner.lock"


class DataDirInUse(RuntimeError):
    """Another live process owns this embedded data directory."""

    def __init__(self, data_dir: Path, owner: dict[str, Any]) -> None:
        self.data_dir = data_dir
        self.pid: int | None = owner.get("pid")
        self.url: str | None = owner.get("url")
        command = owner.get("command") or "another tunemem process"
        who = f"process {self.pid} ({command})" if self.pid else command
        if self.url:
            advice = f"it serves {self.url}: add --url {self.url} to go through it, or stop it"
        else:
            advice = (
                "wait for it to finish or stop it (several processes on one store need the "
                "server mode: PostgreSQL and Chroma's server)"
            )
        super().__init__(
            f"the embedded store {data_dir} is in use by {who}; one process owns an embedded "
            f"store, so {advice}"
        )


class _Held:
    """This process's lock on one directory, shared by every lease on it."""

    def __init__(self, data_dir: Path, handle: IO[str]) -> None:
        self.data_dir = data_dir
        self.handle = handle
        self.leases = 0
        self.owner: dict[str, Any] = {"pid": os.getpid(), "command": _command(), "url": None}

    def write(self) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(self.owner))
        self.handle.flush()


_HELD: dict[Path, _Held] = {}
_GUARD = threading.Lock()


class DataDirLease:
    """One holder's share of the process's lock on a data directory; `release` once."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.resolve()
        self._released = False

    def advertise(self, url: str) -> None:
        """Record the URL this process serves, so a refused process is told to use it."""
        with _GUARD:
            held = _HELD.get(self.data_dir)
            if held is not None and not self._released:
                held.owner["url"] = url
                held.write()

    def release(self) -> None:
        with _GUARD:
            if self._released:
                return
            self._released = True
            held = _HELD.get(self.data_dir)
            if held is None:
                return
            held.leases -= 1
            if held.leases > 0:
                return
            del _HELD[self.data_dir]
            held.handle.seek(0)
            held.handle.truncate()
            held.handle.flush()
            fcntl.flock(held.handle.fileno(), fcntl.LOCK_UN)
            held.handle.close()


def acquire(data_dir: Path) -> DataDirLease:
    """Own `data_dir` (creating it), or raise `DataDirInUse` naming the process that does."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    key = data_dir.resolve()
    with _GUARD:
        held = _HELD.get(key)
        if held is None:
            handle = open(key / LOCK_NAME, "a+", encoding="utf-8")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise DataDirInUse(data_dir, read_owner(key)) from None
            held = _HELD[key] = _Held(key, handle)
            held.write()
        held.leases += 1
    return DataDirLease(key)


def read_owner(data_dir: Path) -> dict[str, Any]:
    """What the owning process wrote about itself ({} when unreadable or mid-write)."""
    try:
        owner = json.loads((Path(data_dir) / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _command() -> str:
    """The owner's command as a person would recognise it ("tunemem serve")."""
    argv = sys.argv or [""]
    name = Path(argv[0]).name or "python"
    words = [name, *(word for word in argv[1:2] if not word.startswith("-"))]
    return " ".join(words)
