"""Re-ranking: blend z-scored similarity and value, add an upper-confidence exploration bonus.

score = (1 - lam) z(sim) + lam z(V) + c sqrt(ln(N + 1) / (n + 1)), with z-scores taken within
the candidate pool and clipped, n the lesson's count in the context's most specific scope and
N the sum of those counts over the pool (DESIGN section 4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.values import ValueEstimate


@dataclass(frozen=True)
class RankingSettings:
    """The knobs of one ranking (`retrieval.knobs` declares them; every one is echoed)."""

    lam: float = 0.5
    k: int = 3
    k_recall: int = 0  # 0 = automatic, see recall_size
    similarity_floor: float = 0.1
    exploration_c: float = 0.3
    z_clip: float = 3.0
    q0: float = 0.0
    kappa: float = 2.0
    backoff: bool = True
    # "chain": the lesson's own outcomes down the scope chain (retrieval.values);
    # "generalised": also recorded reach, neighbour chips and a source prior
    # (retrieval.generalised).
    values: str = "chain"
    # The smallest spread of values that z(V) standardises by: differences of values far
    # below the reward scale are not stretched into a full standard deviation.
    value_floor: float = 0.0
    # The weights of the generalised value's terms (used when values = "generalised").
    generalised: GeneralisedSettings = field(default_factory=GeneralisedSettings)


def recall_size(settings: RankingSettings, memory_size: int) -> int:
    """How many candidates to recall: MemRL's 5/3 of k, scaled up for larger memories."""
    if settings.k_recall > 0:
        return settings.k_recall
    base = math.ceil(5 * settings.k / 3)
    return max(base, min(100, math.ceil(2 * math.sqrt(max(memory_size, 0)))))


@dataclass(frozen=True)
class Candidate:
    lesson_id: str
    similarity: float
    estimate: ValueEstimate


@dataclass(frozen=True)
class RankedLesson:
    lesson_id: str
    score: float
    similarity: float
    value: float
    value_scope: str
    n: int
    exploration: float
    z_sim: float
    z_value: float
    ci_low: float
    ci_high: float
    value_terms: dict[str, float] = field(default_factory=dict)
    claim_trust: dict[str, float] = field(default_factory=dict)


def zscores(values: Sequence[float], clip: float, floor: float = 0.0) -> list[float]:
    """Standardise within the pool (by at least `floor`); a pool without spread gives zeros."""
    if not values:
        return []
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    if var <= 1e-12:
        return [0.0 for _ in values]
    std = max(math.sqrt(var), floor)
    return [max(-clip, min(clip, (v - mean) / std)) for v in values]


def exploration_bonus(c: float, n: int, pool_total: int) -> float:
    return c * math.sqrt(math.log(pool_total + 1) / (n + 1))


def rank(candidates: Sequence[Candidate], settings: RankingSettings) -> list[RankedLesson]:
    """Order candidates by blended score; ties keep the higher similarity first.

    Args:
        candidates: gated candidates with their value estimates for this stage and context.
        settings: lam, k, exploration_c, z_clip are used here.

    Returns:
        The top k ranked lessons with their score breakdown.
    """
    z_sim = zscores([c.similarity for c in candidates], settings.z_clip)
    z_val = zscores([c.estimate.value for c in candidates], settings.z_clip, settings.value_floor)
    pool_total = sum(c.estimate.n_local for c in candidates)
    ranked = []
    for cand, zs, zv in zip(candidates, z_sim, z_val, strict=True):
        bonus = exploration_bonus(settings.exploration_c, cand.estimate.n_local, pool_total)
        score = (1 - settings.lam) * zs + settings.lam * zv + bonus
        ranked.append(
            RankedLesson(
                lesson_id=cand.lesson_id,
                score=score,
                similarity=cand.similarity,
                value=cand.estimate.value,
                value_scope=cand.estimate.scope,
                n=cand.estimate.n_local,
                exploration=bonus,
                z_sim=zs,
                z_value=zv,
                ci_low=cand.estimate.ci_low,
                ci_high=cand.estimate.ci_high,
                value_terms=dict(cand.estimate.weights),
                claim_trust=dict(cand.estimate.trust),
            )
        )
    ranked.sort(key=lambda r: (-r.score, -r.similarity, r.lesson_id))
    return ranked[: settings.k]
