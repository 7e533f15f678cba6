"""The benchmarks (learning, service, ingest) beside their results in bench/results/, the
machine description every result carries, and `write_result`, which writes a result as JSON
and Markdown. Benchmarks compose the packages (services, agents, kernels); the `tunemem bench`
commands call them, and nothing in the product imports them."""

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


def write_result(out: Path, name: str, result: dict[str, Any], markdown: str) -> None:
    """Write `out/name.json` and `out/name.md` and print the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(markdown)
    print(markdown)
    print(f"wrote {out / (name + '.json')} and {out / (name + '.md')}")
