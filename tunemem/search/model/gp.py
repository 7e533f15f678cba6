"""The residual Gaussian process of `search.model_search`: a ridge trend over the encoded
parameters, then a zero-mean GP (Matérn 5/2, length scale by marginal likelihood over a grid)
over what the trend leaves of the calibrated ensemble's errors on the run's observations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from tunemem.search.model.family import FloatArray

LENGTH_SCALES = (0.1, 0.2, 0.35, 0.6, 1.0)  # GP length scales tried, times sqrt(features)
NOISE_SHARE = 0.02  # GP noise variance as a share of the signal variance
# Ridge penalty of the residual's linear trend. A weak one (1) lets a few early outcomes tilt
# the trend so far that the search stays near the stored chips' good region (convolution on
# the A100, development data: 0.679 of the optimum after 100 attempts in the offline replay);
# no trend at all is slow on smooth spaces (the labelled-synthetic tests: optimum at the 27th
# attempt, 18th with 1); 10 reaches 0.886 on the A100 by 50 attempts and the synthetic
# optimum at the 23rd (docs/benchmarks.md, the performance model).
TREND_RIDGE = 10.0


def _matern52(d: FloatArray, length: float) -> FloatArray:
    s = math.sqrt(5.0) * d / length
    return np.asarray((1.0 + s + s * s / 3.0) * np.exp(-s), dtype=np.float64)


def distances(a: FloatArray, b: FloatArray) -> FloatArray:
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.asarray(np.sqrt(np.maximum(sq, 0.0)), dtype=np.float64)


class Residual:
    """A zero-mean GP over the residuals of the calibrated ensemble."""

    def __init__(
        self, x: FloatArray, r: FloatArray, width: float, noise: FloatArray | None = None
    ) -> None:
        """`noise`: each observation's own measurement variance in log latency (the squared
        relative error of its timing), added to the shared noise: a timing with a wide spread
        pulls the fit less than a tight one."""
        self.x = x
        # A linear trend over the features first (ridge), so a direction that pays off on this
        # chip is followed beyond the observations; the GP takes what the trend leaves.
        self.centre = x.mean(0)
        xc = x - self.centre
        self.trend = np.linalg.solve(xc.T @ xc + TREND_RIDGE * np.eye(x.shape[1]), xc.T @ r)
        r = r - xc @ self.trend
        self.signal = max(float(np.var(r)), 1e-3) if len(r) > 1 else 0.05
        own = np.zeros(len(r)) if noise is None else np.asarray(noise, dtype=np.float64)
        diagonal = np.diag(self.signal * NOISE_SHARE + 1e-6 + own)
        d = distances(x, x)
        best: tuple[float, float, Any, FloatArray] | None = None
        for scale in LENGTH_SCALES:
            length = scale * width
            k = self.signal * _matern52(d, length) + diagonal
            chol = np.linalg.cholesky(k)
            alpha = cho_solve((chol, True), r)
            evidence = -0.5 * float(r @ alpha) - float(np.log(np.diag(chol)).sum())
            if best is None or evidence > best[0]:
                best = (evidence, length, chol, alpha)
        assert best is not None
        _, self.length, self.chol, self.alpha = best

    def predict(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        k = self.signal * _matern52(distances(x, self.x), self.length)
        mean = k @ self.alpha + (x - self.centre) @ self.trend
        v = solve_triangular(self.chol, k.T, lower=True)
        var = np.maximum(self.signal - (v * v).sum(0), 1e-9)
        return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
