"""Where a number came from: the provenance every trajectory and every outcome carries.

The tool that measured a thing says how it got it, and the memory keeps that beside the number,
so that a replay, a simulation or a shipped file is never taken for a timing on the chip:

- `origin`: `measured` (timed now, on the device the runtime reported: `device_reported`),
  `recorded` (read from a file of measurements someone took: a Kernel Tuner cache, a Triton
  autotune cache, a Helion autotune log, KernelBench timings), `replayed` (a tool answered
  from such a recording instead of timing: the agent's `--task`, `tune moe --replay`),
  `simulated` (Kernel Tuner's simulation mode), `shipped` (a configuration file a project
  ships, without its timings: vLLM's fused-MoE configs), `hand-entered` (typed by a person:
  `tunemem report`), or `unstated` (a client or a row from before provenance was kept);
- `coverage` (trajectories): `complete`, a whole recorded search space (every valid
  configuration timed), or `partial`, a run that timed some of them; `unstated` as above.
  An outcome is one attempt and has no coverage.

`kerneltuner_coverage` decides a Kernel Tuner cache's coverage from what the file holds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tunemem.platforms import resolve

ORIGINS = (
    "measured",
    "recorded",
    "replayed",
    "simulated",
    "shipped",
    "hand-entered",
    "unstated",
)
COVERAGES = ("complete", "partial", "unstated")
# Origins whose numbers are timings taken on the chip they name, now or when recorded.
TIMED_ON_CHIP = ("measured", "recorded")
MAX_DEVICE_CHARS = 256
# Past this many declared configurations, the enumeration-order check is not attempted.
MAX_ENUMERATED = 2_000_000


@dataclass
class Provenance:
    """How a trajectory's or an outcome's numbers were obtained (module docstring)."""

    origin: str = "unstated"
    coverage: str = "unstated"
    device_reported: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "coverage": self.coverage,
            "device_reported": self.device_reported,
        }


def provenance_problem(provenance: Any, at: str = "provenance") -> str | None:
    """Why `provenance` is not a `Provenance` of known values; None when it is."""
    if not isinstance(provenance, Provenance):
        return f"{at} must be an object with origin, coverage and device_reported"
    if provenance.origin not in ORIGINS:
        return f"{at}.origin {provenance.origin!r} is not one of {', '.join(ORIGINS)}"
    if provenance.coverage not in COVERAGES:
        return f"{at}.coverage {provenance.coverage!r} is not one of {', '.join(COVERAGES)}"
    device = provenance.device_reported
    if device is not None and (not isinstance(device, str) or len(device) > MAX_DEVICE_CHARS):
        return f"{at}.device_reported must be a string of at most {MAX_DEVICE_CHARS} characters"
    if device is not None and provenance.origin != "measured":
        return (
            f"{at}.device_reported is the device a runtime reported while timing; a "
            f"{provenance.origin!r} run timed nothing on a device (give it as null)"
        )
    return None


# The origin of what a reader reads, by its format; the tools' own uploads (native) say theirs.
READER_ORIGINS = {
    "kerneltuner": "recorded",
    "t4": "recorded",
    "triton-autotune": "recorded",
    "kernelbench-timing": "recorded",
    "kernelbench-run": "recorded",
    "openevolve": "recorded",
    "helion-autotune": "recorded",
    "vllm-moe": "shipped",
}


def kerneltuner_coverage(
    declared: Mapping[str, Any], keys: Sequence[str], configs: Sequence[Mapping[str, Any]]
) -> tuple[str, str]:
    """(`complete` or `partial`, the reason in words) for a Kernel Tuner cache.

    A cache does not record its run's restrictions, so a sweep under restrictions and a partial
    run cannot be told apart by counting. What the file does hold decides: a cache with every
    configuration of its declared space is complete; so is one whose entries follow Kernel
    Tuner's enumeration of that space (the order in which a brute-force sweep writes them,
    skipping what the restrictions rule out) and take every declared value of every
    parameter. Anything else (a strategy's run, a sample, an interrupted sweep) is partial.
    """
    raw = [declared.get(k) for k in keys]
    if not configs or not all(isinstance(v, list) and v for v in raw):
        return "partial", "the cache declares no parameter values to compare its entries with"
    lists: list[list[Any]] = [list(v) for v in raw if isinstance(v, list)]
    total = math.prod(len(v) for v in lists)
    distinct = {tuple(str(c.get(k)) for k in keys) for c in configs}
    if len(distinct) >= total:
        return "complete", f"holds all {total} declared configurations"
    for position, name in enumerate(keys):
        seen = {entry[position] for entry in distinct}
        if any(str(value) not in seen for value in lists[position]):
            return "partial", (
                f"holds {len(distinct)} of {total} declared configurations and never "
                f"takes every value of {name!r}"
            )
    if total > MAX_ENUMERATED:
        return "partial", f"holds {len(distinct)} of {total} declared configurations"
    order = {tuple(str(v) for v in combo): i for i, combo in enumerate(itertools.product(*lists))}
    ranks = [order.get(tuple(str(c.get(k)) for k in keys), -1) for c in configs]
    if min(ranks) >= 0 and all(a < b for a, b in itertools.pairwise(ranks)):
        return "complete", (
            f"holds {len(distinct)} of {total} declared configurations in Kernel Tuner's "
            "enumeration order, every value of every parameter: a sweep under restrictions"
        )
    return "partial", (
        f"holds {len(distinct)} of {total} declared configurations, not in a sweep's order"
    )


def device_contradiction(claimed_chip: str, reported: str | None) -> str | None:
    """Why `reported` (a runtime's device name) contradicts `claimed_chip` (the chip a run or an
    outcome is stored under: an id such as `h100`, or a device name); None when it does not, or
    when either side names no chip the registry knows (nothing to compare)."""
    if not reported or not claimed_chip:
        return None
    try:
        claimed_id, reported_id = resolve(claimed_chip).id, resolve(reported).id
    except ValueError:
        return None
    if claimed_id.startswith("unknown:") or reported_id.startswith("unknown:"):
        return None
    if claimed_id == reported_id:
        return None
    return (
        f"the run is named {claimed_chip!r} ({claimed_id}) but the runtime that timed it "
        f"reported {reported!r} ({reported_id}): a measurement belongs to the device it ran on"
    )
