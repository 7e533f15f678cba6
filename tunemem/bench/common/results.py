"""The benchmarks (learning, service, ingest) beside their results in bench/results/, the
machine description every result carries, what the memory held while it was measured
(`memory_held`), and `write_result`, which writes a result as JSON and Markdown. Benchmarks
compose the packages (services, agents, kernels); the `tunemem bench` commands call them, and
nothing in the product imports them."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


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


def write_result(out: Path, name: str, result: dict[str, Any], markdown: str) -> None:
    """Write `out/name.json` and `out/name.md` and print the Markdown. The result must say what
    the memory held (a `memory_held` field, from `memory_held`); the Markdown then says it too."""
    if "memory_held" not in result:
        raise ValueError(f"result {name!r} does not say what the memory held (memory_held)")
    markdown = with_memory_held(markdown, result["memory_held"])
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(markdown)
    print(markdown)
    print(f"wrote {out / (name + '.json')} and {out / (name + '.md')}")
