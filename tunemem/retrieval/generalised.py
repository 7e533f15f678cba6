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

The value is a weighted mean: V = sum_i w_i v_i / sum_i w_i over the terms i = the neutral
prior (Q0, kappa), own outcomes on the target chip (Q, n), each neighbour and recorded chip,
and the source prior. The breakdown names every term with its share of the weight. Everything
is a pure function of the outcome log (through the per-scope statistics) and of the stored
trajectories (through the recorded reaches).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from tunemem.platforms.similarity import chip_similarity
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.recorded import SourceReach, chip_agreement, reach_reward
from tunemem.retrieval.rewards import REWARD_MAX, REWARD_MIN
from tunemem.retrieval.values import PRIOR_SCOPE, PRIOR_VARIANCE, ScopeStats, ValueEstimate

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


def generalised_estimate(
    *,
    target: str | None,
    own: ScopeStats | None,
    neighbours: Mapping[str, ScopeStats],
    recorded: Mapping[str, float],
    affinity: Mapping[str, float],
    prior: tuple[float, float] | None,
    settings: GeneralisedSettings,
    source: str | None = None,
    effects: Mapping[str, float] | None = None,
    trust: Mapping[str, float] | None = None,
    evidence_weight: Mapping[str, float] | None = None,
) -> ValueEstimate:
    """A lesson's generalised value in the target chip's context.

    Args:
        target: the target chip id ("chip:<id>" terms are named after it), or None.
        own: the lesson's outcome statistics in the target chip's scope (this stage).
        neighbours: chip -> the lesson's outcome statistics on other chips (this stage).
        recorded: chip -> the lesson's recorded optimum fraction on that chip's space.
        affinity: chip -> how alike it is to the target (`chip_affinity`).
        prior: (mean, weight) of the source prior, or None.
        settings: the term weights.
        source: the lesson's source chip, for naming the prior term.
        effects: chip -> the recorded effect of following a parameter-setting lesson there
            (reward scale), weighted like a recorded reach.
        trust: chip -> how well the claims of the spaces behind its recorded reach and effect
            reproduced (`retrieval.reproduction.space_trust`; absent: 1); each recorded and
            effect term's weight is multiplied by it.
        evidence_weight: chip -> the weight of one of the lesson's reported outcomes there
            (absent: 1), so outcomes under a superseded toolchain count less
            (`retrieval.toolchain.scope_weights`), as in the chain estimate.

    Returns:
        The estimate; `weights` maps each term ("prior", "chip:<target>" for the own outcomes,
        "outcomes:chip:x", "recorded:chip:x", "effect:chip:x", "source:chip:s") to its share
        of the total weight, `trust` each discounted recorded or effect term to the trust its
        weight was multiplied by, `scope` is the term with the largest share, `n_local` the
        own outcomes.
    """
    terms: list[tuple[str, float, float, float]] = [  # name, value, weight, variance
        (PRIOR_SCOPE, settings.q0, settings.kappa, PRIOR_VARIANCE)
    ]
    n_local = own.n if own else 0
    per_outcome = evidence_weight or {}
    if own and own.n > 0:
        w = own.n * per_outcome.get(target or "", 1.0)
        if w > 0.0:
            terms.append((f"chip:{target}", own.q, w, _variance(own)))
    for chip, stats in sorted(neighbours.items()):
        w = affinity.get(chip, 0.0) * settings.outcome_weight * stats.n * per_outcome.get(chip, 1.0)
        if chip != target and w > 0.0:
            terms.append((f"outcomes:chip:{chip}", stats.q, w, _variance(stats)))
    discounts: dict[str, float] = {}
    for prefix, chip, number in [
        *(("recorded", c, reach_reward(f)) for c, f in sorted(recorded.items())),
        *(("effect", c, max(-1.0, min(1.0, e))) for c, e in sorted((effects or {}).items())),
    ]:
        held = (trust or {}).get(chip, 1.0)
        w = affinity.get(chip, 0.0) * settings.recorded_weight * held
        name = f"{prefix}:chip:{chip}"
        if held < 1.0:
            discounts[name] = held
        if w > 0.0:
            # A recorded measurement is one repetition-averaged timing: little noise.
            terms.append((name, number, w, 0.01))
    if prior is not None and prior[1] > 0.0:
        terms.append((f"source:chip:{source}", prior[0], prior[1], PRIOR_VARIANCE))
    total = sum(w for _, _, w, _ in terms)
    value = sum(v * w for _, v, w, _ in terms) / total
    weights = {name: w / total for name, _, w, _ in terms}
    # The prior is one uncertain guess whatever its weight; the other terms are means of
    # about w observations each.
    variance = sum(
        (w / total) ** 2 * (var if name == PRIOR_SCOPE else var / max(w, 1.0))
        for name, _, w, var in terms
    )
    half_width = 1.96 * math.sqrt(variance)
    dominant = max(weights.items(), key=lambda item: (item[1], item[0] != PRIOR_SCOPE))[0]
    n_total = n_local + sum(s.n for c, s in neighbours.items() if c != target)
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


def affinities(
    target: str,
    chips: Iterable[str],
    reaches: Mapping[str, Mapping[str, float]],
    settings: GeneralisedSettings,
    descriptor: Callable[[str, str], float] = chip_similarity,
) -> dict[str, float]:
    """chip -> affinity to the target (`chip_affinity` of descriptors and recorded agreement,
    at least `settings.affinity_floor`); the target itself is 1."""
    out = {}
    for chip in chips:
        if chip == target:
            out[chip] = 1.0
            continue
        rho, n_common = chip_agreement(reaches, chip, target)
        affinity = chip_affinity(descriptor(chip, target), rho, n_common, settings.affinity_kappa)
        out[chip] = max(affinity, settings.affinity_floor)
    return out


def _variance(stats: ScopeStats) -> float:
    if stats.n < 2:
        return PRIOR_VARIANCE
    return max(stats.sumsq / stats.n - stats.q * stats.q, 1e-6)
