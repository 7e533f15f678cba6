"""How much the family model's columns and its prediction are trusted on one run: the pure
helpers of `search.model_search` (chip weights by bootstrap misranking, as in RGPE, and the
run's confidence in the prediction)."""

from __future__ import annotations

import numpy as np

from tunemem.search.model.family import FloatArray

PRIOR_KAPPA = 2.0  # observations worth of prior weight on the chip weights
BOOTSTRAP = 64  # resamples for the chip weights
CONFIDENCE_KAPPA = 3.0  # outcomes worth of the prior confidence


def chip_weights(
    y: FloatArray, at: FloatArray, prior: FloatArray, rng: np.random.Generator
) -> FloatArray:
    """RGPE-style weights: share of bootstrap resamples each column misranks least."""
    n = len(y)
    if n < 2 or at.shape[1] == 0:
        return prior
    # misranked[s, i, j]: column s orders observations i and j against what was measured. A
    # resample's misranks are c' M_s c with c the resample's count of each observation.
    truth = y[:, None] < y[None, :]
    misranked = (at.T[:, :, None] < at.T[:, None, :]) != truth[None]
    counts = np.zeros((BOOTSTRAP, n))
    draws = rng.integers(0, n, size=(BOOTSTRAP, n))
    np.add.at(counts, (np.arange(BOOTSTRAP)[:, None], draws), 1.0)
    weights_of = misranked.astype(np.float64)
    misranks = np.stack([((counts @ m) * counts).sum(axis=1) for m in weights_of], axis=1)
    wins = misranks <= misranks.min(axis=1, keepdims=True) + 1e-9
    share = (wins / wins.sum(axis=1, keepdims=True)).mean(axis=0)
    weights = (n * share + PRIOR_KAPPA * prior) / (n + PRIOR_KAPPA)
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def run_confidence(prior: float, predicted: FloatArray, measured: FloatArray) -> float:
    """The prior confidence, then the rank correlation of the prediction with the run's
    outcomes (negative counts as 0), shrunk towards the prior by `CONFIDENCE_KAPPA`."""
    n = len(measured)
    if n < 3:
        return prior
    ranks_p = np.argsort(np.argsort(predicted, kind="stable"), kind="stable").astype(float)
    ranks_m = np.argsort(np.argsort(measured, kind="stable"), kind="stable").astype(float)
    if ranks_p.std() == 0 or ranks_m.std() == 0:
        rho = 0.0
    else:
        rho = float(np.corrcoef(ranks_p, ranks_m)[0, 1])
    return (n * max(0.0, rho) + CONFIDENCE_KAPPA * prior) / (n + CONFIDENCE_KAPPA)
