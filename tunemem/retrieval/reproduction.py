"""Claims and their reproductions: how well recorded timings held up when agents re-measured them.

What enters the memory from ingest is a claim (DESIGN section 5): a recorded search space (a
stored trajectory labelled with chip c) claims a latency for every configuration it timed. An
outcome reported on chip c that credits a configuration lesson re-measures that configuration
on c: a reproduction of every claim about it in c's spaces of the same op, parameter names and
problem. Pure functions over plain data:

- `reproduction_ratio`: one reproduction as min(1, claimed / measured): 1 when the
  configuration ran as fast as claimed or faster, claimed / measured when slower, 0 when it
  failed; so noise that happened to flatter a configuration, or a run recorded under the wrong
  chip, shows as ratios under 1;
- `claim_checks`: per recorded space, its reproductions pooled (count, sum of ratios, and the
  claimed and measured reaches, the space's claimed optimum over the claimed and over the
  measured latency, for the analyst);
- `space_trust`: a space's trust, ((sum of ratios + kappa) / (n + kappa)) ** power: 1 for a
  space none of whose claims was re-measured and for one whose claims all held, falling as
  contradicting outcomes accumulate. The generalised value weighs a chip's recorded reach and
  recorded effects by the trust of the spaces they come from (`retrieval.generalised`), so one
  bad run loses its say in every lesson it informs, its own and the others'.

Everything here is a function of the outcome log and the stored trajectories: `values rebuild`
has nothing to recompute for it, and a replayed log gives the same trust.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tunemem.retrieval.recorded import ConfigLesson, RecordedSpace
from tunemem.retrieval.transfer import config_key


@dataclass(frozen=True)
class Remeasurement:
    """One reported outcome of one configuration lesson: where, for what problem, how fast.

    `measured_ms` is None when the attempt was infeasible; `problem` is the task's problem
    size as text (None when the report's task named none: it matches any space).
    """

    chip: str
    lesson_id: str
    measured_ms: float | None
    problem: str | None = None


@dataclass(frozen=True)
class ClaimCheck:
    """A recorded space's reproductions: n, the sum of their ratios, and the sums of the
    claimed and measured reaches (claimed optimum / claimed latency, / measured latency)."""

    n: int = 0
    ratio_sum: float = 0.0
    claimed_reach_sum: float = 0.0
    measured_reach_sum: float = 0.0

    @property
    def mean_ratio(self) -> float | None:
        return self.ratio_sum / self.n if self.n else None


def reproduction_ratio(claimed_ms: float, measured_ms: float | None) -> float:
    """min(1, claimed / measured); an infeasible re-measurement (None, or not > 0) is 0."""
    if measured_ms is None or not measured_ms > 0.0:
        return 0.0
    return min(1.0, claimed_ms / measured_ms)


def claim_checks(
    remeasurements: Iterable[Remeasurement],
    lessons: Mapping[str, ConfigLesson],
    spaces: Iterable[RecordedSpace],
    start: Mapping[str, ClaimCheck] | None = None,
) -> dict[str, ClaimCheck]:
    """Recorded space (trajectory id) -> its pooled reproductions (added, in order, to the
    sums of `start`: the checks of earlier re-measurements, so a log read in parts pools
    exactly as read whole).

    A re-measurement reproduces a space when the space is on the same chip, of the lesson's op
    and parameter names, of the same problem (when both name one), and times the lesson's
    configuration as feasible (a claim the space does not make cannot be contradicted).
    """
    by_chip: dict[tuple[str, str, frozenset[str]], list[RecordedSpace]] = {}
    for space in spaces:
        if space.space.optimum_ms is not None:
            by_chip.setdefault((space.chip, space.op, space.keys), []).append(space)
    sums: dict[str, list[float]] = {
        space: [c.n, c.ratio_sum, c.claimed_reach_sum, c.measured_reach_sum]
        for space, c in (start or {}).items()
    }
    for item in remeasurements:
        lesson = lessons.get(item.lesson_id)
        if lesson is None or not lesson.config:
            continue
        key = config_key(lesson.config)
        for space in by_chip.get((item.chip, lesson.op, frozenset(lesson.config)), []):
            if item.problem is not None and space.problem not in (None, item.problem):
                continue
            claimed = space.space.latency.get(key)
            optimum = space.space.optimum_ms
            if claimed is None or not claimed > 0.0 or optimum is None:
                continue
            row = sums.setdefault(space.trajectory_id, [0.0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += reproduction_ratio(claimed, item.measured_ms)
            row[2] += optimum / claimed
            measured = item.measured_ms
            row[3] += optimum / measured if measured is not None and measured > 0.0 else 0.0
    return {
        space: ClaimCheck(int(n), ratio, claimed, measured)
        for space, (n, ratio, claimed, measured) in sums.items()
    }


def space_trust(check: ClaimCheck | None, kappa: float, power: float) -> float:
    """((sum of ratios + kappa) / (n + kappa)) ** power; 1 with no reproduction.

    kappa is the prior's weight in reproductions (a space is trusted until outcomes say
    otherwise); power sharpens the discount (2: a space whose claims held half-way weighs a
    quarter).
    """
    if check is None or check.n <= 0:
        return 1.0
    return float(((check.ratio_sum + kappa) / (check.n + kappa)) ** power)


def chip_trust(
    lesson_spaces: Mapping[str, Iterable[str]], trust: Mapping[str, float]
) -> dict[str, float]:
    """chip -> the mean trust of the spaces a lesson's recorded reach on that chip comes from
    (spaces absent from `trust` count as 1)."""
    out = {}
    for chip, space_ids in lesson_spaces.items():
        values = [trust.get(s, 1.0) for s in space_ids]
        if values:
            out[chip] = sum(values) / len(values)
    return out
