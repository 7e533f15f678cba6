"""How a batch of the performance model's suggestions is composed: the pure batch step of
`search.model_search`.

A batch of k holds up to three kinds of pick, each with its purpose:

- **exploit**: expected improvement, each pick discounting the candidates near the earlier
  ones as much as the memory is unsure (1 - confidence);
- **local**: once the run's best has stopped improving (the model's predictions are no longer
  being confirmed), or from the first batch where the memory is unsure of its ranking here,
  untried neighbours of the run's best configurations: those that differ
  from one of them in one parameter (two, once those are spent), the nearest values first and
  by expected improvement among equally near ones, around the best first. A model trained on
  other chips can rank a basin's neighbours wrongly for this one (it ranked them by its own
  ideas, the search stayed where they are); this searches the incumbent's neighbourhood as a
  pattern search would;
- **explore**: space-filling picks, the candidates farthest from everything tried among those
  whose optimistic prediction is in the better half. A share (1 - confidence) / 2 of the batch
  where the memory is unsure, and, whatever the confidence, a share that grows as the best
  stalls, so a long run keeps leaving the region it is stuck in.

The shares grow with the stall (observations since the best one): none before `STALL_START`,
full at `STALL_FULL`; and, before any stall, with the memory's unsureness (1 - confidence: a
ranking the run's outcomes do not confirm is searched around the run's own best at once, as at
a stall); both as much as the memory measured little of the space (1 - coverage: a
memory of whole recorded spaces keeps its own ranking to the end; with them, the local picks
cost convolution on the A100 0.931 -> 0.679 of its optimum at 100 evaluations). The
unsureness term was developed on the self-fed development caches (convolution and
dedispersion, three seeds, leave-one-chip-out): 0.806 -> 0.845 of the optimum at 10
evaluations on average; local picks for unsureness beside an unchanged exploring share
instead (one exploit in five) gave 0.832, dedispersion alone 0.951 -> 0.938. A share's
count is rounded by a seeded draw, so a batch of one (the agent asks for one configuration at
a time) takes each kind with the share's probability. At least one pick of a batch of two or
more exploits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from tunemem.search.model.family import ConfigKey, FloatArray
from tunemem.search.model.gp import distances

EXPLORE_SHARE = 0.5  # share of a batch that explores when the confidence is 0
INTERVAL_Z = 1.645  # a 90% interval
# Observations since the run's best before the stall-driven shares start, and where they are
# full: one batch of five of the Kernel Tuner strategy without improvement starts the local
# picks, four batches make them (and the exploration) full.
STALL_START = 5
STALL_FULL = 20
LOCAL_SHARE = 0.4  # share of a batch searching the incumbent's neighbours at a full stall
STALL_EXPLORE_SHARE = 0.2  # share of a batch exploring at a full stall, whatever the confidence
LOCAL_CENTRES = 3  # the run's best configurations whose neighbours the local picks search
EXPLORE_YIELD = 0.5  # share of the unsure memory's exploration the local picks take at a full stall


def stall_level(stall: int) -> float:
    """0 before `STALL_START` observations without improvement, 1 from `STALL_FULL` on."""
    if stall < STALL_START:
        return 0.0
    return min(1.0, (stall - STALL_START + 1) / (STALL_FULL - STALL_START + 1))


def _count(share: float, k: int, draw: float) -> int:
    return min(k, int(math.floor(k * share + draw)))


def search_level(stall: int, confidence: float, coverage: float) -> float:
    """How far a batch turns from the model's ranking to the run's own neighbourhood and to
    exploring, 0 to 1: the stall's level or the memory's unsureness (1 - confidence), whichever
    is higher, as much as the memory measured little of the space (module docstring)."""
    return max(stall_level(stall), 1.0 - confidence) * (1.0 - coverage)


def batch_counts(
    k: int, confidence: float, stall: int, draw: float, coverage: float = 0.0
) -> tuple[int, int]:
    """(local, explore) picks of a batch of k; the rest exploit (module docstring)."""
    level = search_level(stall, min(1.0, max(0.0, confidence)), coverage)
    # Exploration for want of confidence gives way to the local picks as the level rises.
    unsure_share = EXPLORE_SHARE * (1.0 - confidence) * (1.0 - EXPLORE_YIELD * level)
    unsure = int(math.floor(k * unsure_share + 0.5))
    explore = max(min(k, unsure), _count(STALL_EXPLORE_SHARE * level, k, draw))
    local = _count(LOCAL_SHARE * level, k, 1.0 - draw) if level > 0 else 0
    if k >= 2 and local + explore > k - 1:
        local = min(local, k - 1)
        explore = max(0, k - 1 - local)
    return local, explore


class BatchInputs:
    """What the batch step reads of a posterior (all over the candidates)."""

    def __init__(
        self,
        features: FloatArray,
        open_rows: npt.NDArray[np.bool_],
        acquisition: FloatArray,
        mean: FloatArray,
        var: FloatArray,
        length: float,
        confidence: float,
        observed_features: FloatArray,
        ranked_observed: FloatArray,
    ) -> None:
        self.features = features
        self.open = open_rows
        self.acquisition = acquisition
        self.mean = mean
        self.var = var
        self.length = length
        self.confidence = confidence
        self.observed_features = observed_features
        self.ranked_observed = ranked_observed  # the run's feasible configurations, best first


def pick_batch(
    inputs: BatchInputs, k: int, stall: int, draw: float, coverage: float = 0.0
) -> list[tuple[int, str]]:
    """The batch (module docstring): (candidate position, purpose), exploitation first; `draw`
    in [0, 1) rounds the shares' counts, `coverage` is the share of the candidates the memory
    measured."""
    if not inputs.open.any():
        return []
    n_local, n_explore = batch_counts(k, inputs.confidence, stall, draw, coverage)
    if not len(inputs.ranked_observed):
        n_local = 0
    score = np.where(inputs.open, inputs.acquisition, -np.inf)
    picks: list[tuple[int, str]] = []
    taken = ~inputs.open.copy()
    for _ in range(k - n_local - n_explore):
        i = int(np.argmax(score))
        if not np.isfinite(score[i]):
            break
        picks.append((i, "exploit"))
        taken[i] = True
        near = distances(inputs.features, inputs.features[i : i + 1])[:, 0]
        # As unsure as the memory is: a sure one keeps its ranking (full recorded spaces:
        # a full discount cost convolution on the A4000 0.99 -> 0.79 at 5 evaluations).
        discount = 1.0 - (1.0 - inputs.confidence) * np.exp(-((near / inputs.length) ** 2))
        score = np.where(np.isfinite(score), score * discount, score)
        score[i] = -np.inf
    for i in _local(inputs, taken, n_local):
        picks.append((i, "local"))
        taken[i] = True
    for i in _explore(inputs, taken, n_explore, [i for i, _ in picks]):
        picks.append((i, "explore"))
    return picks


def _steps(features: FloatArray) -> npt.NDArray[np.int64]:
    """Each candidate's value of each parameter as its position among the values present."""
    columns = [np.unique(features[:, j], return_inverse=True)[1] for j in range(features.shape[1])]
    return np.stack(columns, axis=1).reshape(features.shape).astype(np.int64)


def _local(inputs: BatchInputs, taken: npt.NDArray[np.bool_], n: int) -> list[int]:
    """Up to n untried neighbours of the run's best configurations: one parameter changed
    (then two), the nearest values first (one value step before two, in any parameter), then
    around the better configuration, then by expected improvement."""
    out: list[int] = []
    if n <= 0:
        return out
    steps = _steps(inputs.features)
    centres = inputs.ranked_observed[:LOCAL_CENTRES]
    for hamming in (1, 2):
        rows, keys = [], []
        for rank, centre in enumerate(centres):
            same = inputs.features == centre[None, :]
            ring = np.flatnonzero((same.shape[1] - same.sum(axis=1) == hamming) & ~taken)
            at = steps[int(np.flatnonzero(same.all(axis=1))[0])]
            far = np.abs(steps[ring] - at[None, :]).sum(axis=1)
            rows.append(ring)
            keys.append(np.stack([far, np.full(len(ring), rank)], axis=1))
        ring, key = np.concatenate(rows), np.concatenate(keys)
        order = np.lexsort((-inputs.acquisition[ring], key[:, 1], key[:, 0]))
        for i in ring[order]:
            if len(out) == n:
                return out
            if not taken[i]:
                out.append(int(i))
                taken[i] = True
    return out


def _explore(
    inputs: BatchInputs, taken: npt.NDArray[np.bool_], n: int, chosen: list[int]
) -> list[int]:
    """Up to n space-filling picks among the promising half (module docstring)."""
    out: list[int] = []
    open_rows = ~taken
    if n <= 0 or not open_rows.any():
        return out
    lower = inputs.mean - INTERVAL_Z * np.sqrt(inputs.var)
    promising = open_rows & (lower <= np.median(lower[open_rows]))
    tried = np.vstack([inputs.observed_features, inputs.features[chosen]])
    far = distances(inputs.features, tried).min(axis=1) if len(tried) else np.ones(len(lower))
    for _ in range(n):
        gap = np.where(promising, far, -np.inf)
        i = int(np.argmax(gap))
        if not np.isfinite(gap[i]):
            break
        out.append(i)
        promising[i] = False
        far = np.minimum(far, distances(inputs.features, inputs.features[i : i + 1])[:, 0])
    return out


def stall_of(observations: Sequence[tuple[ConfigKey, float | None]]) -> int:
    """Observations made after the run's best one (all of them before a feasible one)."""
    latencies = [ms if ms is not None and ms > 0 else math.inf for _, ms in observations]
    if not latencies or min(latencies) == math.inf:
        return len(latencies)
    return len(latencies) - 1 - latencies.index(min(latencies))
