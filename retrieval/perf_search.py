"""Model-based search: a family model refit to one run's observations, and expected improvement.

Pure. `fit_posterior` takes a `FamilyModel` (every stored chip's normalised latencies over the
family's candidate configurations), the run's observations on the target chip and a prior weight
per stored chip (from chip similarity: descriptors), and returns a `Posterior`:

1. Chip weights: before two feasible observations, the prior weights; then, as in a
   ranking-weighted ensemble (RGPE), each chip's share of bootstrap resamples of the
   observations on which its column misranks the fewest pairs, shrunk towards the prior by
   κ = 2 observations. A chip whose good configurations are good here gains weight; one whose
   are not loses it.
2. Calibration: the weighted column m is mapped to the run's log latencies by a + b·m (b shrunk
   towards 1), so the prediction is in this chip's milliseconds.
3. Residual: a Gaussian process (Matérn 5/2 over the encoded parameters, length scale by
   marginal likelihood over a grid) fitted to what the calibrated ensemble got wrong on the run's
   observations, so the run's own outcomes dominate near where they were measured. Its variance,
   widened by the chips' disagreement, is the uncertainty.
4. Acquisition: expected improvement over the best observed latency; without a feasible
   observation, the lowest predicted latency. A tried configuration is never suggested;
   candidates are the stored feasible configurations (or the caller's valid list), restricted
   to the caller's parameter values.

The cost is bounded whatever the run sent: the chip weights and the residual are fitted on at
most `FIT_OBSERVATIONS` feasible observations (the fastest half of that, then a seeded sample
of the rest), so they cost O(FIT_OBSERVATIONS²) memory and O(FIT_OBSERVATIONS³) time however
many observations come (a suggest accepts 10,000); every observation still counts as tried, and
the calibration and the best latency use them all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.linalg import cho_solve, solve_triangular
from scipy.special import ndtr

from retrieval.perf_model import ConfigKey, FamilyModel, FloatArray

PRIOR_KAPPA = 2.0  # observations worth of prior weight on the chip weights
BOOTSTRAP = 64  # resamples for the chip weights
SLOPE_RIDGE = 0.5  # shrinkage of the calibration slope towards 1
LENGTH_SCALES = (0.1, 0.2, 0.35, 0.6, 1.0)  # GP length scales tried, times sqrt(features)
NOISE_SHARE = 0.02  # GP noise variance as a share of the signal variance
INTERVAL_Z = 1.645  # a 90% interval
# Ridge penalty of the residual's linear trend. A weak one (1) lets a few early outcomes tilt
# the trend so far that the search stays near the stored chips' good region (convolution on
# the A100, development data: 0.679 of the optimum after 100 attempts in the offline replay);
# no trend at all is slow on smooth spaces (the labelled-synthetic tests: optimum at the 27th
# attempt, 18th with 1); 10 reaches 0.886 on the A100 by 50 attempts and the synthetic
# optimum at the 23rd (docs/benchmarks.md, the performance model).
TREND_RIDGE = 10.0
# The GP is evaluated on a shortlist: the candidates the calibrated ensemble rates best,
# optimistically (mean minus two deviations), and a seeded sample of the rest.
SHORTLIST = 1500
SHORTLIST_SAMPLE = 500
# Feasible observations the chip weights and the residual GP are fitted on, at most: a model
# step of a long run costs what one of this many observations does (well under a second).
FIT_OBSERVATIONS = 256


def fit_subsample(y: FloatArray, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Which observations the weights and the residual are fitted on: all of them up to
    `FIT_OBSERVATIONS`; past that, the fastest half of the bound and a seeded sample of the
    rest (expected improvement needs the best region sharp and the rest roughly)."""
    if len(y) <= FIT_OBSERVATIONS:
        return np.arange(len(y), dtype=np.int64)
    order = np.argsort(y, kind="stable")
    best = order[: FIT_OBSERVATIONS // 2]
    rest = rng.choice(order[FIT_OBSERVATIONS // 2 :], FIT_OBSERVATIONS - len(best), replace=False)
    return np.asarray(np.sort(np.concatenate([best, rest])), dtype=np.int64)


@dataclass(frozen=True)
class ModelSuggestion:
    """One configuration the model proposes, with what it rests on."""

    key: ConfigKey
    predicted_ms: float | None  # None before a feasible observation (no scale yet)
    fraction: float  # predicted fraction of the predicted optimum of the space
    interval: tuple[float, float]  # 90% interval of that fraction
    expected_improvement: float  # in ln(latency) units; 0 before a feasible observation
    chips: dict[str, float]  # weight of each stored chip's space in the prediction
    n_observations: int  # the run's feasible observations the prediction is refit on
    drivers: list[tuple[str, Any, float]]  # (parameter, value, predicted latency ratio)


def _matern52(d: FloatArray, length: float) -> FloatArray:
    s = math.sqrt(5.0) * d / length
    return np.asarray((1.0 + s + s * s / 3.0) * np.exp(-s), dtype=np.float64)


def _distances(a: FloatArray, b: FloatArray) -> FloatArray:
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.asarray(np.sqrt(np.maximum(sq, 0.0)), dtype=np.float64)


class _Residual:
    """A zero-mean GP over the residuals of the calibrated ensemble."""

    def __init__(self, x: FloatArray, r: FloatArray, width: float) -> None:
        self.x = x
        # A linear trend over the features first (ridge), so a direction that pays off on this
        # chip is followed beyond the observations; the GP takes what the trend leaves.
        self.centre = x.mean(0)
        xc = x - self.centre
        self.trend = np.linalg.solve(xc.T @ xc + TREND_RIDGE * np.eye(x.shape[1]), xc.T @ r)
        r = r - xc @ self.trend
        self.signal = max(float(np.var(r)), 1e-3) if len(r) > 1 else 0.05
        noise = self.signal * NOISE_SHARE + 1e-6
        d = _distances(x, x)
        best: tuple[float, float, Any, FloatArray] | None = None
        for scale in LENGTH_SCALES:
            length = scale * width
            k = self.signal * _matern52(d, length) + noise * np.eye(len(r))
            chol = np.linalg.cholesky(k)
            alpha = cho_solve((chol, True), r)
            evidence = -0.5 * float(r @ alpha) - float(np.log(np.diag(chol)).sum())
            if best is None or evidence > best[0]:
                best = (evidence, length, chol, alpha)
        assert best is not None
        _, self.length, self.chol, self.alpha = best

    def predict(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        k = self.signal * _matern52(_distances(x, self.x), self.length)
        mean = k @ self.alpha + (x - self.centre) @ self.trend
        v = solve_triangular(self.chol, k.T, lower=True)
        var = np.maximum(self.signal - (v * v).sum(0), 1e-9)
        return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)


def _chip_weights(
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


class _Keys:
    """The candidates' keys: stored rows of the model, then the caller's extra keys."""

    def __init__(
        self, model: FamilyModel, rows: npt.NDArray[np.int64], extra: list[ConfigKey]
    ) -> None:
        self.model, self.rows, self.extra = model, rows, extra
        self.position = np.full(model.size, -1, dtype=np.int64)
        self.position[rows] = np.arange(len(rows))
        self.extra_position = {key: len(rows) + i for i, key in enumerate(extra)}

    def __len__(self) -> int:
        return len(self.rows) + len(self.extra)

    def __getitem__(self, i: int) -> ConfigKey:
        n = len(self.rows)
        return self.model.keys[int(self.rows[i])] if i < n else self.extra[i - n]

    def locate(self, key: ConfigKey) -> int | None:
        """The candidate position of a key, or None."""
        row = self.model.index.get(key)
        if row is not None and self.position[row] >= 0:
            return int(self.position[row])
        return self.extra_position.get(key)


class Posterior:
    """The family model refit to one run: predictions over the candidates and suggestions."""

    def __init__(
        self,
        model: FamilyModel,
        keys: _Keys,
        features: FloatArray,
        columns: FloatArray,
        open_rows: npt.NDArray[np.bool_],
        observed: list[tuple[int, float]],
        prior: FloatArray,
        seed: int,
    ) -> None:
        self.model = model
        self.keys = keys
        self.features = features
        self.open = open_rows
        rng = np.random.default_rng(seed)
        all_rows = np.array([i for i, _ in observed], dtype=np.int64)
        all_y = np.array([v for _, v in observed], dtype=np.float64)
        self.n_observations = len(all_y)
        fit = fit_subsample(all_y, rng)
        rows, y = all_rows[fit], all_y[fit]
        self.n_fit = len(y)
        self.weights = _chip_weights(y, columns[rows], prior, rng)
        m = columns @ self.weights
        spread = ((columns - m[:, None]) ** 2) @ self.weights
        a, b = 0.0, 1.0
        if len(all_y) >= 1:
            dm, dy = m[all_rows] - m[all_rows].mean(), all_y - all_y.mean()
            if len(all_y) >= 2:
                b = float(np.clip((dm @ dy + SLOPE_RIDGE) / (dm @ dm + SLOPE_RIDGE), 0.05, 3.0))
            a = float(all_y.mean() - b * m[all_rows].mean())
        self.mean = a + b * m
        self.var = b * b * spread + 1e-4
        if len(y) >= 2:
            width = math.sqrt(max(1, int((features.max(0) > features.min(0)).sum())))
            residual = _Residual(features[rows], y - self.mean[rows], width)
            short = self._shortlist(residual.signal, rng)
            shift, gp_var = residual.predict(features[short])
            self.mean[short] += shift
            self.var[short] = gp_var / residual.signal * (residual.signal + self.var[short])
            # Outside the shortlist the GP is not evaluated: those candidates keep the
            # ensemble's mean and cannot win the acquisition.
            outside = np.ones(len(keys), dtype=bool)
            outside[short] = False
            self.open = self.open & ~outside
        self.best = float(all_y.min()) if len(all_y) else None

    def _shortlist(self, signal: float, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        candidates = np.flatnonzero(self.open)
        if len(candidates) <= SHORTLIST + SHORTLIST_SAMPLE:
            return np.arange(len(self.keys))
        optimistic = self.mean[candidates] - 2.0 * np.sqrt(self.var[candidates] + signal)
        order = np.argsort(optimistic, kind="stable")
        top, rest = candidates[order[:SHORTLIST]], candidates[order[SHORTLIST:]]
        sample = rng.choice(rest, size=min(SHORTLIST_SAMPLE, len(rest)), replace=False)
        return np.asarray(np.sort(np.concatenate([top, sample])), dtype=np.int64)

    def acquisition(self) -> FloatArray:
        """Expected improvement (ln units) over the best observation; before one, -mean."""
        sigma = np.sqrt(self.var)
        if self.best is None:
            return np.asarray(-self.mean, dtype=np.float64)
        z = (self.best - self.mean) / sigma
        ei = sigma * (z * ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi))
        return np.asarray(ei, dtype=np.float64)

    def suggest(self, k: int) -> list[ModelSuggestion]:
        """Up to k untried candidates, best acquisition first (ties by candidate order)."""
        score = np.where(self.open, self.acquisition(), -np.inf)
        order = np.argsort(-score, kind="stable")[:k]
        optimum = float(self.mean.min())
        chips = {
            chip: round(float(w), 4)
            for chip, w in zip(self.model.chips, self.weights, strict=True)
            if w >= 0.005
        }
        out = []
        for i in order:
            if not np.isfinite(score[i]):
                break
            sd = math.sqrt(float(self.var[i]))
            mu = float(self.mean[i])
            out.append(
                ModelSuggestion(
                    key=self.keys[i],
                    predicted_ms=math.exp(mu) if self.best is not None else None,
                    fraction=round(min(1.0, math.exp(optimum - mu)), 4),
                    interval=(
                        round(min(1.0, math.exp(optimum - mu - INTERVAL_Z * sd)), 4),
                        round(min(1.0, math.exp(optimum - mu + INTERVAL_Z * sd)), 4),
                    ),
                    expected_improvement=(
                        round(float(score[i]), 6) if self.best is not None else 0.0
                    ),
                    chips=chips,
                    n_observations=self.n_observations,
                    drivers=self.drivers(int(i)),
                )
            )
        return out

    def predict(self, key: ConfigKey) -> float | None:
        """The predicted ln latency of a candidate (None when it is not one)."""
        i = self.keys.locate(key)
        return None if i is None else float(self.mean[i])

    def drivers(self, i: int, top: int = 3) -> list[tuple[str, Any, float]]:
        """The parameters whose values in candidate i move the prediction most: the mean
        prediction over candidates sharing that value against the mean over all of them."""
        overall = float(self.mean.mean())
        effects = []
        for j, name in enumerate(self.model.params):
            same = self.features[:, j] == self.features[i, j]
            effect = float(self.mean[same].mean()) - overall
            effects.append((abs(effect), name, self.keys[i][j], round(math.exp(effect), 3)))
        effects.sort(key=lambda e: (-e[0], e[1]))
        return [(name, value, ratio) for _, name, value, ratio in effects[:top] if ratio != 1.0]


def fit_posterior(
    model: FamilyModel,
    observations: Sequence[tuple[ConfigKey, float | None]],
    prior: Mapping[str, float],
    *,
    allowed: Mapping[str, Sequence[Any]] | None = None,
    valid: Sequence[ConfigKey] | None = None,
    seed: int = 0,
) -> Posterior:
    """Refit the family model to a run's observations.

    Args:
        model: the family's trained model.
        observations: (configuration key in the family's parameter order, latency in ms or
            None when it failed), the run's own attempts.
        prior: a weight per stored chip (e.g. its similarity to the target); missing chips 0,
            all zero or empty: uniform.
        allowed: per parameter, the values the caller's space allows; candidates outside it
            are left out.
        valid: the caller's own list of valid configurations; when given, the candidates.
        seed: the bootstrap's and the shortlist's seed (same inputs and seed, same posterior).
    """
    if valid is not None:
        wanted = list(dict.fromkeys(valid))
        rows = np.array([model.index.get(key, -1) for key in wanted], dtype=np.int64)
        extra = [key for key, row in zip(wanted, rows, strict=True) if row < 0]
        stored = rows[rows >= 0]
    else:
        extra = []
        stored = np.arange(model.size, dtype=np.int64)
    if allowed is not None:
        mask = model.allowed_rows(allowed)
        stored = stored[mask[stored]]
        extra = [key for key in extra if _keeps_to(model, key, allowed)]
    # Feasible observations outside the candidates still inform the fit.
    member = np.zeros(model.size, dtype=bool)
    member[stored] = True
    extra_set = set(extra)
    for key, ms in observations:
        row = model.index.get(key, -1)
        if ms is None or ms <= 0:
            continue
        if row >= 0 and not member[row]:
            stored = np.append(stored, row)
            member[row] = True
        elif row < 0 and key not in extra_set:
            extra.append(key)
            extra_set.add(key)
    keys = _Keys(model, stored, extra)
    features = np.vstack([model.features[stored], model.encode(extra)])
    columns = np.vstack([model.columns[stored], model.predict_columns(extra)])
    open_rows = np.ones(len(keys), dtype=bool)
    observed = []
    for key, ms in observations:
        at = keys.locate(key)
        if at is None:
            continue
        open_rows[at] = False
        if ms is not None and ms > 0:
            observed.append((at, math.log(ms)))
    weights = np.array([max(0.0, float(prior.get(c, 0.0))) for c in model.chips])
    if weights.sum() <= 0:
        weights = np.ones(len(model.chips))
    return Posterior(
        model, keys, features, columns, open_rows, observed, weights / weights.sum(), seed
    )


def _keeps_to(model: FamilyModel, key: ConfigKey, allowed: Mapping[str, Sequence[Any]]) -> bool:
    return all(
        name not in allowed
        or any(v == a and isinstance(v, bool) == isinstance(a, bool) for a in allowed[name])
        for name, v in zip(model.params, key, strict=True)
    )
