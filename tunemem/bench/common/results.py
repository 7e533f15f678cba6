"""What every benchmark result carries, and `write_result`, which writes one as JSON and
Markdown: the machine, what the memory held while it was measured (`memory_held`), and how to
reproduce it (`provenance`: the code version, the command, replayed or measured, the seeds).
Benchmarks compose the packages (services, agents, kernels); the `tunemem bench` commands call
them, and nothing in the product imports them."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from tunemem.bench.common.paths import REPO_ROOT


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "python": platform.python_version(),
        "os": platform.platform(),
    }


# What a memory can hold while a result is measured. A figure means little without it: the same
# strategy reaches very different fractions of the optimum from complete recorded spaces (the
# best case), from what earlier runs of the user's own tuners timed, and from nothing.
MEMORY_HELD = {
    "complete": "complete recorded search spaces of other chips or keys (the best case, as "
    "after ingesting whole Kernel Tuner caches or sweeps)",
    "self-fed": "only what earlier tuning runs timed and reported (what a user's own memory holds)",
    "cold": "nothing at the start: the memory starts empty and holds only what this run timed",
    "shipped": "other GPUs' shipped tuned configuration files (the best configuration of each "
    "batch size, no other timings) and nothing measured on the target",
    "none": "no tuning memory is measured: the figures are of the service or the kernels",
}


# How a figure was obtained: recorded timings replayed (no kernel ran; Kernel Tuner's simulation
# mode, the recorded H200 sweeps) or measured on the machine the result names.
MEASUREMENTS = {
    "replayed": "recorded timings replayed: no kernel ran while it was made",
    "measured": "timed on the machine named in the result",
}
# The fields without which a result cannot be reproduced or read.
PROVENANCE = ("code_version", "command", "machine", "memory_held", "measurement", "seeds")


# What counts as the code of a result: a change elsewhere (docs, tests, other results) does not
# change a figure.
CODE_PATHS = ("tunemem", "pyproject.toml", "requirements.lock", "requirements-dev.lock")


def code_version(root: Path = REPO_ROOT) -> str:
    """The last git commit that changed the code (`CODE_PATHS`) that ran, `+uncommitted` when the
    code differed from it; outside a git checkout, the installed package's version."""
    try:
        # The last commit that changed the code: pages and results committed after it leave
        # the code version as it was.
        head = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--format=%H", "--", *CODE_PATHS],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--"]
            + list(CODE_PATHS),
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        try:
            return f"tunemem {metadata.version('tunemem')} (not a git checkout)"
        except metadata.PackageNotFoundError:
            return "tunemem (not a git checkout, not installed)"
    return head + ("+uncommitted" if changed else "")


@functools.cache
def started_on() -> str:
    """The code version when this process first asked: a benchmark pins it before it runs, so
    a commit made while it runs is not taken for the code that ran."""
    return code_version()


def provenance(
    command: str, seeds: Sequence[int], kind: str, device: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The fields that say how to reproduce a result: `command` (the exact command line, with
    today's module names), the seeds it ran, whether it was replayed or measured (`kind`), the
    code version and the machine, with what a GPU run adds to it (`device`: the GPU, its
    toolchain)."""
    return {
        "code_version": started_on(),
        "command": command,
        "machine": {**machine(), **(device or {})},
        "measurement": kind,
        "seeds": list(seeds),
    }


def merged_provenance(parts: Sequence[dict[str, Any]], command: str) -> dict[str, Any]:
    """The provenance of one result joined from `parts` by `command`: every part's command and
    then the join's, every code version and seed of the parts, the first part's machine. Parts
    measured and replayed are not joined; a part without its provenance is refused."""
    for part in parts:
        check_provenance({"memory_held": memory_held("none"), **part})
    kinds = {part["measurement"] for part in parts}
    if len(kinds) > 1:
        raise ValueError(f"cannot join results both {' and '.join(sorted(kinds))}")
    versions = dict.fromkeys(str(part["code_version"]) for part in parts)
    return {
        "code_version": ", ".join(versions),
        "command": " ; ".join([*(str(part["command"]) for part in parts), command]),
        "machine": parts[0]["machine"],
        "measurement": kinds.pop(),
        "seeds": sorted({seed for part in parts for seed in part["seeds"]}),
    }


def memory_held(kind: str, detail: str = "") -> dict[str, str]:
    """The `memory_held` field of a result: one of `MEMORY_HELD`'s kinds, what that means, and
    what this run's memory held in particular (`detail`)."""
    if kind not in MEMORY_HELD:
        raise ValueError(f"unknown memory_held {kind!r}; valid: {', '.join(MEMORY_HELD)}")
    held = {"kind": kind, "meaning": MEMORY_HELD[kind]}
    if detail:
        held["detail"] = detail
    return held


def memory_held_line(held: dict[str, str]) -> str:
    """The Markdown line that says what the memory held."""
    line = f"Memory held: **{held['kind']}**, {held['meaning']}"
    return line + (f"; {held['detail']}." if held.get("detail") else ".")


def with_memory_held(markdown: str, held: dict[str, str]) -> str:
    """The Markdown with the line that says what the memory held under its title (once)."""
    line = memory_held_line(held)
    if line in markdown:
        return markdown
    title, _, rest = markdown.partition("\n")
    if not title.startswith("#"):
        return f"{line}\n\n{markdown}"
    return f"{title}\n\n{line}\n{rest}"


def check_provenance(result: dict[str, Any]) -> None:
    """Raise `ValueError` unless the result has every `PROVENANCE` field, a known measurement,
    at least one seed, and a command whose `python -m` module exists."""
    missing = [field for field in PROVENANCE if result.get(field) in (None, "", {}, [])]
    if missing:
        raise ValueError(
            f"a result must say {', '.join(missing)} (see bench.common.results.provenance)"
        )
    held = result["memory_held"]
    if not isinstance(held, dict) or held.get("kind") not in MEMORY_HELD:
        raise ValueError(
            f"memory_held must be one of {', '.join(MEMORY_HELD)} as memory_held() writes it, "
            f"not {held!r}"
        )
    if not isinstance(result["machine"], dict) or not isinstance(result["command"], str):
        raise ValueError("a result's machine is a mapping and its command a command line")
    if result["measurement"] not in MEASUREMENTS:
        raise ValueError(
            f"unknown measurement {result['measurement']!r}; valid: {', '.join(MEASUREMENTS)}"
        )
    seeds = result["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers, not {seeds!r}")
    for module in _modules(str(result["command"])):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ValueError(f"the command names a module that does not exist: {module}")


def _modules(command: str) -> list[str]:
    """The modules a command line runs with `python -m` (in each `;`-joined part)."""
    words = shlex.split(command.replace(";", " ; "))
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == "-m"]


def provenance_line(result: dict[str, Any]) -> str:
    """The Markdown line that says how the result was made and how to make it again."""
    seeds = ", ".join(map(str, result["seeds"]))
    cpu = result["machine"].get("cpu") if isinstance(result["machine"], dict) else None
    where = f" on {cpu}" if cpu else ""
    return (
        f"Code: `{result['code_version']}`; {result['measurement']}{where}; seeds {seeds}. "
        f"Reproduce: `{result['command']}`"
    )


def write_result(
    out: Path, name: str, result: dict[str, Any], markdown: str, echo: bool = True
) -> None:
    """Write `out/name.json` and `out/name.md` and print the Markdown (unless not `echo`). The
    result must say what the memory held (`memory_held`) and how to reproduce it
    (`provenance`), or nothing is written; the Markdown then says both under its title."""
    check_provenance(result)
    markdown = with_memory_held(markdown, result["memory_held"])
    held = memory_held_line(result["memory_held"])
    markdown = markdown.replace(held, f"{held}\n\n{provenance_line(result)}", 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(markdown)
    if echo:
        print(markdown)
    print(f"wrote {out / (name + '.json')} and {out / (name + '.md')}")
