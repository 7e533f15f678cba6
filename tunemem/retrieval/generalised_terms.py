"""The terms of the generalised value, one entry each in `TERMS`.

A term is a statistic of a lesson's evidence (`GeneralisedInputs`: what the store holds for the
candidates of one retrieval), weighed by one knob of `GeneralisedSettings`; it yields one
`TermValue` per chip it has evidence on, named `<prefix>:chip:<chip>` (the own outcomes:
`chip:<target>`). `retrieval.generalised.generalised_estimate` adds the neutral prior and
iterates this list; the breakdown's `value_terms` names every entry, so a new term is one
function, one line in `TERMS`, its weight's field and its knob (docs/development.md walks it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.recorded import (
    ConfigLesson,
    PerSpace,
    RecordedSpace,
    SourceReach,
    per_chip,
    reach_reward,
)
from tunemem.retrieval.reproduction import chip_trust
from tunemem.retrieval.values import PRIOR_VARIANCE, ScopeStats

# A recorded measurement is one repetition-averaged timing: little noise.
RECORDED_VARIANCE = 0.01


@dataclass(frozen=True)
class GeneralisedInputs:
    """What the generalised values of one retrieval's candidates are computed from.

    Every mapping is keyed by lesson id first (absent: no such evidence); `target` is the chip
    the values are for and `affinity` how alike each chip is to it (absent: 0; the service
    passes `generalised.Affinities`, which works each chip out when a term first asks).
    """

    target: str | None
    affinity: Mapping[str, float] = field(default_factory=dict)
    # lesson -> chip -> its outcome statistics there (this stage), the target's among them
    stats: Mapping[str, Mapping[str, ScopeStats]] = field(default_factory=dict)
    # lesson -> chip -> the weight of one of its outcomes there (a toolchain's discount; absent 1)
    outcome_weights: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # lesson -> chip -> recorded space -> its optimum fraction there (configuration lessons)
    reaches: PerSpace = field(default_factory=dict)
    # lesson -> chip -> recorded space -> the recorded effect of following it (setting lessons)
    effects: PerSpace = field(default_factory=dict)
    # recorded space -> how well its claims reproduced (`reproduction.space_trust`; absent 1)
    space_trust: Mapping[str, float] = field(default_factory=dict)
    # lesson -> its source chip, and source chip -> chip -> its lessons' pooled reaches there
    sources: Mapping[str, str | None] = field(default_factory=dict)
    pooled: Mapping[str, Mapping[str, SourceReach]] = field(default_factory=dict)
    # what they were derived from, for a term of its own statistic
    spaces: tuple[RecordedSpace, ...] = ()
    lessons: Mapping[str, ConfigLesson] = field(default_factory=dict)

    def own(self, lesson: str) -> ScopeStats | None:
        """The lesson's outcome statistics on the target chip."""
        return self.stats.get(lesson, {}).get(self.target or "")

    def neighbours(self, lesson: str) -> dict[str, ScopeStats]:
        """chip -> the lesson's outcome statistics on the other chips."""
        return {c: s for c, s in self.stats.get(lesson, {}).items() if c != self.target}

    def chip_trust(self, lesson: str) -> dict[str, float]:
        """chip -> the mean trust of the spaces behind the lesson's recorded terms there."""
        if not self.space_trust:
            return {}
        rows = self.reaches.get(lesson) or self.effects.get(lesson) or {}
        return chip_trust(rows, self.space_trust)


class TermValue(NamedTuple):
    """One entry of the weighted mean: its name in the breakdown, value, weight, variance, and
    the trust its weight was multiplied by (below 1: named in the breakdown's `claim_trust`)."""

    name: str
    value: float
    weight: float
    variance: float
    trust: float = 1.0


TermValues = Callable[[str, GeneralisedInputs, GeneralisedSettings], Iterator[TermValue]]


@dataclass(frozen=True)
class Term:
    """One term: its entries' name prefix, the settings field (a knob) that weighs it (None:
    its own counts weigh it), and its statistic, giving a lesson's entries."""

    prefix: str
    weight: str | None
    values: TermValues


def variance_of(stats: ScopeStats) -> float:
    """The variance of one outcome's reward in these statistics (the prior's below 2)."""
    if stats.n < 2:
        return PRIOR_VARIANCE
    return max(stats.sumsq / stats.n - stats.q * stats.q, 1e-6)


def own_outcomes(
    lesson: str, inputs: GeneralisedInputs, s: GeneralisedSettings
) -> Iterator[TermValue]:
    """The lesson's reported outcomes on the target chip, each weighing 1 (or its discount)."""
    own = inputs.own(lesson)
    if own and own.n > 0:
        per_outcome = inputs.outcome_weights.get(lesson, {})
        weight = own.n * per_outcome.get(inputs.target or "", 1.0)
        yield TermValue(f"chip:{inputs.target}", own.q, weight, variance_of(own))


def neighbour_outcomes(
    lesson: str, inputs: GeneralisedInputs, s: GeneralisedSettings
) -> Iterator[TermValue]:
    """The lesson's reported outcomes on other chips, weighted by their affinity."""
    per_outcome = inputs.outcome_weights.get(lesson, {})
    for chip, stats in sorted(inputs.neighbours(lesson).items()):
        w = inputs.affinity.get(chip, 0.0) * s.outcome_weight * stats.n * per_outcome.get(chip, 1.0)
        yield TermValue(f"outcomes:chip:{chip}", stats.q, w, variance_of(stats))


def _recorded(
    prefix: str,
    numbers: Mapping[str, float],
    trust: Mapping[str, float],
    inputs: GeneralisedInputs,
    s: GeneralisedSettings,
) -> Iterator[TermValue]:
    for chip, number in sorted(numbers.items()):
        held = trust.get(chip, 1.0)
        w = inputs.affinity.get(chip, 0.0) * s.recorded_weight * held
        yield TermValue(f"{prefix}:chip:{chip}", number, w, RECORDED_VARIANCE, held)


def recorded_reach(
    lesson: str, inputs: GeneralisedInputs, s: GeneralisedSettings
) -> Iterator[TermValue]:
    """A configuration lesson's optimum fraction f on each recorded chip, as the reward 2f - 1."""
    fractions = per_chip(inputs.reaches.get(lesson, {}), inputs.space_trust)
    rewards = {chip: reach_reward(f) for chip, f in fractions.items()}
    yield from _recorded("recorded", rewards, inputs.chip_trust(lesson), inputs, s)


def recorded_effect(
    lesson: str, inputs: GeneralisedInputs, s: GeneralisedSettings
) -> Iterator[TermValue]:
    """A parameter-setting lesson's recorded effect on each chip (the reward scale)."""
    effects = per_chip(inputs.effects.get(lesson, {}), inputs.space_trust)
    clipped = {chip: max(-1.0, min(1.0, e)) for chip, e in effects.items()}
    yield from _recorded("effect", clipped, inputs.chip_trust(lesson), inputs, s)


def source_prior(
    source: str,
    reaches: Mapping[str, SourceReach],
    affinity: Mapping[str, float],
    settings: GeneralisedSettings,
) -> tuple[float, float, int]:
    """A source chip's track record on chips like the target.

    Args:
        source: the source chip (its own spaces are no transfer and are skipped).
        reaches: chip -> pooled reaches of the source's lessons recorded on that chip.
        affinity: chip -> how alike it is to the target (absent = 0).
        settings: source_weight and kappa are used.

    Returns:
        (mean reward, weight, lessons pooled): the mean of the reaches weighted by
        affinity x count, and a weight of source_weight W / (W + kappa) with W the summed
        affinity x count, so a thin or unlike record weighs little.
    """
    weighted = 0.0
    total = 0.0
    pooled = 0
    for chip, reach in reaches.items():
        if chip == source or reach.n <= 0:
            continue
        w = affinity.get(chip, 0.0)
        if w <= 0.0:
            continue
        weighted += w * reach.reward_sum
        total += w * reach.n
        pooled += reach.n
    if total <= 0.0:
        return settings.q0, 0.0, 0
    weight = settings.source_weight * total / (total + settings.kappa)
    return weighted / total, weight, pooled


def source_record(
    lesson: str, inputs: GeneralisedInputs, s: GeneralisedSettings
) -> Iterator[TermValue]:
    """How the lessons of the lesson's source chip have reached on chips like the target."""
    source = inputs.sources.get(lesson)
    if source:
        mean, weight, _ = source_prior(source, inputs.pooled.get(source, {}), inputs.affinity, s)
        yield TermValue(f"source:chip:{source}", mean, weight, PRIOR_VARIANCE)


# The order is the breakdown's and the order of the sums (so of the last bits of the value).
TERMS: tuple[Term, ...] = (
    Term("chip", None, own_outcomes),
    Term("outcomes", "outcome_weight", neighbour_outcomes),
    Term("recorded", "recorded_weight", recorded_reach),
    Term("effect", "recorded_weight", recorded_effect),
    Term("source", "source_weight", source_record),
)
