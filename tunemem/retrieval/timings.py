"""How much one report's timing is worth: the spread of repeated timings (DESIGN section 4).

A report carries one latency, several timings of the attempt, or a latency with the spread of
the timings behind it (their standard deviation) and how many there were. The relative error
of the reported latency is the spread over the latency, divided by the square root of the
repetitions; one timing whose spread nobody measured is assumed to be as noisy as
`SINGLE_TIMING_ERROR` (kernel timings on a shared machine move by several per cent from run to
run). A refine update is scaled by 1 / (1 + (error / ERROR_SCALE)^2): several tight timings
move a value by the full learning rate, one unmeasured timing by half of it, a wide spread
by less. Draft rewards (feasible or not) do not depend on the timing and keep the full step.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

SINGLE_TIMING_ERROR = 0.1  # relative error assumed of one timing without a measured spread
ERROR_SCALE = 0.1  # the relative error at which a refine update counts half


@dataclass(frozen=True)
class TimingSummary:
    """A report's latency with its spread (standard deviation of one timing) and repetitions."""

    latency_ms: float
    spread_ms: float | None
    repetitions: int

    @property
    def relative_error(self) -> float:
        """The relative standard error of the latency."""
        if self.spread_ms is None or (self.repetitions < 2 and self.spread_ms == 0):
            return SINGLE_TIMING_ERROR / math.sqrt(max(self.repetitions, 1))
        return self.spread_ms / self.latency_ms / math.sqrt(max(self.repetitions, 1))


def summarise(
    timings_ms: Sequence[float] | None,
    latency_ms: float | None,
    spread_ms: float | None,
    repetitions: int | None,
) -> TimingSummary | None:
    """The summary of what a report says about its latency (None: it gives none).

    Several timings: their median, standard deviation and count. Otherwise the latency with
    the spread and repetitions given (a spread without a count counts as one timing's).
    """
    if timings_ms:
        values = list(timings_ms)
        spread = statistics.stdev(values) if len(values) > 1 else None
        return TimingSummary(statistics.median(values), spread, len(values))
    if latency_ms is None:
        return None
    return TimingSummary(latency_ms, spread_ms, repetitions or 1)


def timing_weight(summary: TimingSummary | None, scale: float = ERROR_SCALE) -> float:
    """The share of the learning rate a refine update from this timing gets (1 without one)."""
    if summary is None:
        return 1.0
    return 1.0 / (1.0 + (summary.relative_error / scale) ** 2)


def update_weight(stage: str, feasible: bool, summary: TimingSummary | None) -> float:
    """The share of the learning rate one outcome's update takes: a refine reward of a
    feasible attempt rests on its timing, so the timing's spread tempers it; any other reward
    does not depend on a timing."""
    if stage != "refine" or not feasible:
        return 1.0
    return timing_weight(summary)
