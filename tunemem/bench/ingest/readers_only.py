"""Reading + distilling rate over some inputs: `python -m tunemem.bench.ingest.readers_only
PATH...` (the
readers alone; `tunemem bench ingest` measures storing too).

Prints trajectories, attempts, lessons and rejects, and attempts per second end to end
(reading, parsing, chip normalisation and deterministic distillation; no storage).
"""

from __future__ import annotations

import sys
import time

from tunemem.ingest.distill import distill
from tunemem.ingest.readers import read_any
from tunemem.ingest.records import TrajectoryRecord


def main(paths: list[str]) -> str:
    """Read and distil everything under `paths`; return the one-line summary."""
    start = time.perf_counter()
    trajectories = attempts = lessons = rejects = 0
    for record in read_any(paths):
        if isinstance(record, TrajectoryRecord):
            trajectories += 1
            attempts += len(record.attempts)
            lessons += len(distill(record))
        else:
            rejects += 1
    seconds = time.perf_counter() - start
    return (
        f"{trajectories} trajectories, {attempts} attempts, {lessons} lessons, {rejects} rejects "
        f"in {seconds:.2f} s: {attempts / seconds:,.0f} attempts/s"
    )


if __name__ == "__main__":
    print(main(sys.argv[1:]))
