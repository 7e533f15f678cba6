"""What the benchmarks' command lines share: each benchmark that `python -m tunemem.bench.<name>`
runs declares its options once, in its module's argparse parser, and `tunemem bench <name>`
hands its arguments to that parser (`cli/bench.py`); `Listed` reads a list option in every
spelling either entry point has accepted (`--orders 0,1,2`, `--orders 0 1 2`,
`--merge a --merge b`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any


def prog(name: str, argv: Sequence[str] | None) -> str:
    """How the command that parses `argv` is called: `tunemem bench <name>` hands its arguments
    over as a list, `python -m tunemem.bench.<name>` leaves them in `sys.argv` (None)."""
    return f"python -m tunemem.bench.{name}" if argv is None else f"tunemem bench {name}"


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The exact command that ran: the entry point `prog` names and the arguments as given."""
    words = list(sys.argv[1:] if argv is None else argv)
    return " ".join([prog(name, argv), shlex.join(words)]).strip()


class Listed(argparse.Action):
    """A list option: its values space- or comma-separated, the option given once or repeated,
    one flat list that replaces the default. `item` converts each value (`int` for seeds); a
    value it refuses is a usage error that names the option."""

    def __init__(
        self, *args: Any, item: Callable[[str], Any] = str, what: str = "values", **kwargs: Any
    ) -> None:
        kwargs.setdefault("nargs", "+")
        super().__init__(*args, **kwargs)
        self.item = item
        self.what = what

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given = [values] if isinstance(values, str) else list(values or [])
        words = [w for value in given for w in str(value).split(",") if w.strip()]
        try:
            items = [self.item(w.strip()) for w in words]
        except ValueError as exc:
            raise argparse.ArgumentError(
                self, f"takes {self.what}, not {','.join(given)!r}"
            ) from exc
        current = getattr(namespace, self.dest, None)
        earlier = [] if current is None or current is self.default else list(current)
        setattr(namespace, self.dest, earlier + items)
