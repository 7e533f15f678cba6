"""Generalised lesson values: evidence beyond the one lesson and the fixed scope chain.

The chain estimate (`retrieval.values`) sees only a lesson's own outcomes in the target's chip,
family, backend and global scopes; on a new chip it is Q0 for every lesson. The generalised
value also draws on (DESIGN section 5):

- recorded reach: how close the lesson's configuration comes to the optimum of every recorded
  search space of the same kernel and parameter space in memory (the transfer audit's optimum
  fractions), as a reward 2f - 1 in [-1, 1], weighted by how alike that space's chip is to the
  target;
- recorded effect, for a parameter-setting lesson ("prefer use_shmem=1"): how much following it
  speeds up configurations of every recorded space of the same op on each chip
  (`retrieval.recorded.setting_effects`, already on the reward scale), weighted the same way;
- neighbour outcomes: the lesson's reported outcomes on other chips, weighted the same way;
- a source prior: how lessons distilled on the lesson's source chip have reached on chips like
  the target, pooled over all of that source's lessons (any kernel), so a lesson nobody has
  tried inherits its source's track record.

How alike two chips are starts from their descriptors (`platforms.similarity`) and moves
towards how well their recorded reaches have agreed (rank correlation over lessons recorded on
both), as that evidence accumulates; it never falls below `affinity_floor`, so every recorded
chip keeps a small say: a configuration that does well on many unlike chips is robust, and on
the development data that robustness carried over where neither descriptors nor agreement
pointed to any one chip.

The value is a weighted mean: V = sum_i w_i v_i / sum_i w_i over the neutral prior (Q0, kappa)
and the entries of the terms in `retrieval.generalised_terms.TERMS`: own outcomes on the target
chip (Q, n), each neighbour and recorded chip, and the source prior. The breakdown names every
entry with its share of the weight. Everything
is a pure function of the outcome log (through the per-scope statistics) and of the stored
trajectories (through the recorded reaches).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from tunemem.platforms.similarity import chip_similarity
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.generalised_terms import TERMS, GeneralisedInputs, Term, TermValue
from tunemem.retrieval.recorded import chip_agreement
from tunemem.retrieval.rewards import REWARD_MAX, REWARD_MIN
from tunemem.retrieval.values import PRIOR_SCOPE, PRIOR_VARIANCE, ValueEstimate

GENERALISED_SCOPE = "generalised"


def chip_affinity(
    descriptor_similarity: float, agreement: float | None, n_common: int, kappa: float
) -> float:
    """How alike two chips are: descriptors first, then how well their reaches agreed.

    (n_common max(0, agreement) + kappa descriptor_similarity) / (n_common + kappa): with no
    lesson recorded on both chips it is the descriptor similarity; with many it is the
    (non-negative) rank correlation of the lessons' reaches on the two.
    """
    if agreement is None or n_common <= 0:
        return descriptor_similarity
    return (n_common * max(0.0, agreement) + kappa * descriptor_similarity) / (n_common + kappa)


def generalised_estimate(
    lesson: str,
    inputs: GeneralisedInputs,
    settings: GeneralisedSettings,
    terms: Sequence[Term] = TERMS,
) -> ValueEstimate:
    """A lesson's generalised value in the target chip's context: the neutral prior (Q0,
    kappa) and every entry of every term (`generalised_terms.TERMS`) that weighs anything.

    Returns:
        The estimate; `weights` maps each entry ("prior", "chip:<target>" for the own outcomes,
        "outcomes:chip:x", "recorded:chip:x", "effect:chip:x", "source:chip:s") to its share
        of the total weight, `trust` each discounted entry to the trust its weight was
        multiplied by, `scope` is the entry with the largest share, `n_local` the own outcomes.
    """
    entries = [TermValue(PRIOR_SCOPE, settings.q0, settings.kappa, PRIOR_VARIANCE)]
    discounts: dict[str, float] = {}
    for term in terms:
        for entry in term.values(lesson, inputs, settings):
            if entry.trust < 1.0:
                discounts[entry.name] = entry.trust
            if entry.weight > 0.0:
                entries.append(entry)
    total = sum(e.weight for e in entries)
    value = sum(e.value * e.weight for e in entries) / total
    weights = {e.name: e.weight / total for e in entries}
    # The prior is one uncertain guess whatever its weight; the other entries are means of
    # about w observations each.
    variance = sum(
        (w / total) ** 2 * (var if name == PRIOR_SCOPE else var / max(w, 1.0))
        for name, _, w, var, _ in entries
    )
    half_width = 1.96 * math.sqrt(variance)
    dominant = max(weights.items(), key=lambda item: (item[1], item[0] != PRIOR_SCOPE))[0]
    own = inputs.own(lesson)
    n_local = own.n if own else 0
    n_total = n_local + sum(s.n for s in inputs.neighbours(lesson).values())
    return ValueEstimate(
        value=value,
        scope=dominant,
        n_local=n_local,
        n_total=n_total,
        # Rewards lie in [-1, 1]: so does their mean, and so the interval (as the chain's).
        ci_low=max(REWARD_MIN, value - half_width),
        ci_high=min(REWARD_MAX, value + half_width),
        weights=weights,
        trust=discounts,
    )


def affinity_to(
    target: str,
    chip: str,
    reaches: Mapping[str, Mapping[str, float]],
    settings: GeneralisedSettings,
    descriptor: Callable[[str, str], float] = chip_similarity,
) -> float:
    """How alike a chip is to the target (`chip_affinity` of descriptors and recorded
    agreement, at least `settings.affinity_floor`); the target itself is 1."""
    if chip == target:
        return 1.0
    rho, n_common = chip_agreement(reaches, chip, target)
    affinity = chip_affinity(descriptor(chip, target), rho, n_common, settings.affinity_kappa)
    return max(affinity, settings.affinity_floor)


def affinities(
    target: str,
    chips: Iterable[str],
    reaches: Mapping[str, Mapping[str, float]],
    settings: GeneralisedSettings,
    descriptor: Callable[[str, str], float] = chip_similarity,
) -> dict[str, float]:
    """chip -> affinity to the target (`affinity_to`), for each of `chips`."""
    return {chip: affinity_to(target, chip, reaches, settings, descriptor) for chip in chips}


class Affinities(Mapping[str, float]):
    """chip -> affinity to the target, each worked out when a term first asks for it, so a
    retrieval pays only for the chips its candidates have evidence on, whichever terms read
    them. Iterating gives the chips worked out so far."""

    def __init__(
        self,
        target: str,
        reaches: Mapping[str, Mapping[str, float]],
        settings: GeneralisedSettings,
        descriptor: Callable[[str, str], float] = chip_similarity,
    ) -> None:
        self._target, self._reaches, self._settings = target, reaches, settings
        self._descriptor = descriptor
        self._known: dict[str, float] = {}

    def __getitem__(self, chip: str) -> float:
        if chip not in self._known:
            self._known[chip] = affinity_to(
                self._target, chip, self._reaches, self._settings, self._descriptor
            )
        return self._known[chip]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._known))

    def __len__(self) -> int:
        return len(self._known)
