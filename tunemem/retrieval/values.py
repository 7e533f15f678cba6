"""Lesson values per stage and scope: the running update and the shrinkage estimate.

Statistics live per (lesson, stage, scope). An outcome updates every scope of the context's
chain with Q <- Q + alpha (r - Q). The estimate for a context shrinks down the chain
(DESIGN section 5): starting from the neutral prior Q0, each scope from global to the most
specific one gives V_s = (n_s Q_s + kappa V_parent) / (n_s + kappa).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tunemem.retrieval.rewards import REWARD_MAX, REWARD_MIN

PRIOR_SCOPE = "prior"
# Variance of a reward uniform on [-1, 1]: the uncertainty of a value nobody has observed.
PRIOR_VARIANCE = 1.0 / 3.0


@dataclass(frozen=True)
class ScopeStats:
    """Observed statistics of one lesson, for one stage, in one scope."""

    n: int = 0
    q: float = 0.0
    sumsq: float = 0.0


@dataclass(frozen=True)
class ValueEstimate:
    """A lesson's value in a context, with where it came from and how sure it is."""

    value: float
    scope: str
    n_local: int
    n_total: int
    ci_low: float
    ci_high: float
    weights: dict[str, float] = field(default_factory=dict)
    # term -> the trust in its recorded claims its weight was multiplied by (only those < 1)
    trust: dict[str, float] = field(default_factory=dict)


def update_stats(stats: ScopeStats | None, reward: float, alpha: float, q0: float) -> ScopeStats:
    """Apply one reward to one scope's statistics (Q <- Q + alpha (r - Q); Q starts at Q0)."""
    current = stats or ScopeStats(n=0, q=q0, sumsq=0.0)
    q = current.q + alpha * (reward - current.q)
    return ScopeStats(n=current.n + 1, q=q, sumsq=current.sumsq + reward * reward)


def _scope_variance(stats: ScopeStats) -> float:
    if stats.n < 2:
        return PRIOR_VARIANCE
    return max(stats.sumsq / stats.n - stats.q * stats.q, 1e-6)


def value_estimate(
    chain: Sequence[str],
    stats: Mapping[str, ScopeStats],
    *,
    q0: float,
    kappa: float,
    backoff: bool = True,
    evidence_weight: Mapping[str, float] | None = None,
) -> ValueEstimate:
    """Estimate a lesson's value in a context by shrinkage down its scope chain.

    Args:
        chain: the context's scopes, most specific first (e.g. chip, family, backend, global).
        stats: this lesson's statistics per scope for the stage in question; missing = unseen.
        q0: the neutral initial value, the root prior.
        kappa: prior strength in pseudo-observations.
        backoff: when False, only the most specific scope is used (against Q0), so values
            learned elsewhere do not carry over.
        evidence_weight: per scope, the weight of one of its observations (default 1): each
            scope counts as n_s * weight observations, so evidence from a superseded toolchain
            counts less (`retrieval.toolchain.scope_weights`).

    Returns:
        The estimate, the scope carrying the largest weight ("prior" when nothing observed
        dominates), the local and total counts, an approximate 95% interval (normal
        approximation, clipped to the reward range [-1, 1] that a value cannot leave) and the
        weights.
    """
    scopes = list(chain) if backoff else list(chain[:1])
    value = q0
    weights: dict[str, float] = {PRIOR_SCOPE: 1.0}
    for scope in reversed(scopes):
        observed = stats.get(scope)
        n = (observed.n if observed else 0) * (evidence_weight or {}).get(scope, 1.0)
        if n <= 0:
            continue
        keep = kappa / (n + kappa)
        value = (n * observed.q + kappa * value) / (n + kappa)  # type: ignore[union-attr]
        weights = {name: w * keep for name, w in weights.items()}
        weights[scope] = n / (n + kappa)

    variance = weights[PRIOR_SCOPE] ** 2 * PRIOR_VARIANCE
    for scope, weight in weights.items():
        if scope == PRIOR_SCOPE:
            continue
        observed = stats[scope]
        n_weighted = observed.n * (evidence_weight or {}).get(scope, 1.0)
        variance += weight**2 * _scope_variance(observed) / n_weighted
    half_width = 1.96 * math.sqrt(variance)
    dominant = max(weights.items(), key=lambda item: (item[1], item[0] != PRIOR_SCOPE))[0]
    local = stats.get(chain[0]) if chain else None
    return ValueEstimate(
        value=value,
        scope=dominant,
        n_local=local.n if local else 0,
        n_total=sum(stats[s].n for s in scopes if s in stats),
        ci_low=max(REWARD_MIN, value - half_width),
        ci_high=min(REWARD_MAX, value + half_width),
        weights=weights,
    )
