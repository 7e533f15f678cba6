"""How far the memory's stored keys reach a new key: the extrapolation term of the confidence.

Pure. The performance model's confidence (`search.model_search`, 4.) starts from the share of
the candidates the memory measured, and then trusts the run's own rank correlation. Neither
knows whether the memory measured them *at a key like this one*: a memory of small batch sizes
that measured every configuration is as sure of a batch size 64 times larger as of one next to
them, and the run's first dozen outcomes (picked by the model itself) rarely contradict it.

`key_reach` answers from the memory's own evidence, with no scale to tune: how well did one
stored key's measurements rank another's, for stored keys at least as far apart as the new key
is from the nearest stored one? For every pair of stored spaces of one chip (so the chip's
effect stays out) at two different keys, the rank correlation of their normalised latencies over
the configurations both measured is one piece of evidence at that pair's distance. The reach is
the mean of those correlations (negative counts as 0) over the pairs at least as far apart as
the new key is from its nearest stored key; none that far apart: the memory has never seen its
measurements carry that far, and the reach is 0. A key the memory holds (distance 0), or no key
to measure distance by, has reach 1 (nothing changes).

Distance is Euclidean over the keys' log2 sizes both keys name and their dtype width
(`search.model.pooled.KeyContext`); the chip stays out of it: across chips the stored
similarity of descriptors is the prior already (`memory_service.core.suggest`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tunemem.search.model.family import FloatArray

MIN_COMMON = 3  # configurations two spaces must share for a rank correlation
# Pairs of spaces a model's evidence is computed from, at most (evenly spaced beyond): a bound on
# the one-off cost per built model, which the first request after a build pays.
MAX_PAIRS = 1000
MAX_ROWS = 512  # configurations a pair's correlation is computed over, at most (evenly spaced)


def key_distance(a: Any, b: Any) -> float:
    """Distance of two keys (`KeyContext`): log2 sizes both name, and log2 dtype width."""
    shared = set(a.sizes) & set(b.sizes)
    squares = [(math.log2(a.sizes[s]) - math.log2(b.sizes[s])) ** 2 for s in shared]
    if a.dtype_bytes > 0 and b.dtype_bytes > 0:
        squares.append((math.log2(a.dtype_bytes) - math.log2(b.dtype_bytes)) ** 2)
    return math.sqrt(sum(squares))


def _rank_correlation(x: FloatArray, y: FloatArray) -> float:
    rx = np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(float)
    ry = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def transfer_evidence(
    columns: FloatArray,
    measured: npt.NDArray[np.bool_],
    labels: Sequence[str],
    contexts: Mapping[str, Any],
) -> list[tuple[float, float]]:
    """(distance, rank correlation) of every pair of stored spaces of one chip at two keys.

    Args:
        columns: (candidates, spaces) normalised ln latencies (`FamilyModel.columns`).
        measured: (candidates, spaces) whether the space measured the candidate.
        labels: each column's label.
        contexts: label -> the key it was measured at (labels without one take no part); two
            spaces are of one chip when their keys' chip descriptors are equal.
    """
    out = []
    labelled = [j for j, label in enumerate(labels) if label in contexts]
    pairs = [
        (i, j)
        for x, i in enumerate(labelled)
        for j in labelled[x + 1 :]
        if contexts[labels[i]].chip == contexts[labels[j]].chip
    ]
    if len(pairs) > MAX_PAIRS:
        pairs = [pairs[round(n * len(pairs) / MAX_PAIRS)] for n in range(MAX_PAIRS)]
    for i, j in pairs:
        distance = key_distance(contexts[labels[i]], contexts[labels[j]])
        common = np.flatnonzero(measured[:, i] & measured[:, j])
        if distance <= 0 or len(common) < MIN_COMMON:
            continue
        if len(common) > MAX_ROWS:
            common = common[np.linspace(0, len(common) - 1, MAX_ROWS).astype(np.int64)]
        out.append((distance, _rank_correlation(columns[common, i], columns[common, j])))
    return out


def key_reach(
    target: Any, contexts: Mapping[str, Any], evidence: Sequence[tuple[float, float]]
) -> float:
    """The reach of the stored keys at `target` (module docstring), 0 to 1."""
    if target is None or not contexts:
        return 1.0
    nearest = min(key_distance(target, c) for c in contexts.values())
    if nearest <= 0:
        return 1.0
    far = [max(0.0, rho) for distance, rho in evidence if distance >= nearest]
    return float(np.mean(far)) if far else 0.0


def model_reach(model: Any, target: Any) -> float:
    """`key_reach` of a `FamilyModel` at `target`, its pairs' evidence computed once per model."""
    if target is None or not model.contexts:
        return 1.0
    if min(key_distance(target, c) for c in model.contexts.values()) <= 0:
        return 1.0  # a stored key: no evidence needed
    if model.reach_evidence is None:
        model.reach_evidence = transfer_evidence(
            model.columns, model.measured, model.chips, model.contexts
        )
    return key_reach(target, model.contexts, model.reach_evidence)
