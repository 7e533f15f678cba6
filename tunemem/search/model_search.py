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
4. Confidence: how far the memory's prediction can be trusted here, 0 to 1. Before the run's
   outcomes, the share of the candidates some stored chip measured (a memory of whole recorded
   spaces is sure of itself; one of a few partial runs is not); then, shrunk towards that by
   κ = 3 outcomes, the rank correlation of the prediction with what the run measured.
5. Acquisition: expected improvement over the best observed latency (without a feasible
   observation, the lowest predicted latency), in a batch composed by `search.model.batch`:
   exploitation that discounts the candidates near earlier picks as much as the memory is
   unsure; once the run's best stalls, the best-predicted untried neighbours of its best
   configurations; and space-filling picks, a share that grows as the memory is unsure and as
   the best stalls. Every suggestion carries the confidence and its purpose. The GP is
   evaluated on a shortlist of large spaces (the ensemble's most promising candidates, a seeded
   sample of the rest, and always the neighbours of the run's best configurations).
   A tried configuration is never suggested; candidates are the stored feasible ones (or the
   caller's valid list), restricted to the caller's parameter values.

The cost is bounded whatever the run sent: the chip weights and the residual are fitted on at
most `FIT_OBSERVATIONS` feasible observations (the fastest half of that, then a seeded sample
of the rest), so they cost O(FIT_OBSERVATIONS²) memory and O(FIT_OBSERVATIONS³) time however
many observations come (a suggest accepts 10,000); every observation still counts as tried, and
the calibration and the best latency use them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr

from tunemem.search.model.batch import INTERVAL_Z, BatchInputs, batch_counts, pick_batch, stall_of
from tunemem.search.model.family import ConfigKey, FamilyModel, FloatArray
from tunemem.search.model.gp import Residual
from tunemem.search.model.weights import chip_weights, run_confidence

SLOPE_RIDGE = 0.5  # shrinkage of the calibration slope towards 1
# The GP's shortlist: the candidates the ensemble rates best (mean minus two deviations).
SHORTLIST = 1500
SHORTLIST_SAMPLE = 500
POOLED = "pooled"  # the pooled model's column (`search.model.pooled`)
# Share of the prior weight of the pooled column: half when no stored column was measured at
# the run's problem (the key is new); none when one was (the column is left out): across chips
# at one problem, three chips' descriptors are too few to generalise from (development data,
# self-fed convolution, leave-one-chip-out, one seed: a share of 0.5 took the W6600 from 0.99
# to 0.82 of its optimum at 50 evaluations, 0.1 the mean at 100 from 0.96 to 0.80).
POOLED_SHARE_NEW_KEY = 0.5
POOLED_SHARE_KNOWN_KEY = 0.0
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
    confidence: float = 1.0  # how far the memory's prediction holds here (module, 4.)
    purpose: str = "exploit"  # "exploit", "local" or "explore" (`search.model.batch`)
    stall: int = 0  # the run's outcomes since its best one


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
        observed: list[tuple[int, float, float]],  # (row, ln latency, its variance)
        prior: FloatArray,
        seed: int,
        prior_confidence: float = 1.0,
        names: Sequence[str] = (),
        stall: int = 0,
    ) -> None:
        self.model = model
        self.stall = stall
        self.names = tuple(names) or model.chips
        self.keys = keys
        self.features = features
        self.open = open_rows
        rng = np.random.default_rng(seed)
        self.draw = float(np.random.default_rng((seed, 1)).random())  # the fit's stream intact
        all_rows = np.array([i for i, _, _ in observed], dtype=np.int64)
        all_y = np.array([v for _, v, _ in observed], dtype=np.float64)
        all_noise = np.array([n for _, _, n in observed], dtype=np.float64)
        self.ranked_observed = features[all_rows[np.argsort(all_y, kind="stable")]]
        self.n_observations = len(all_y)
        fit = fit_subsample(all_y, rng)
        rows, y, noise = all_rows[fit], all_y[fit], all_noise[fit]
        self.n_fit = len(y)
        self.weights = chip_weights(y, columns[rows], prior, rng)
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
        self.coverage = prior_confidence  # the share of the candidates the memory measured
        self.confidence = run_confidence(prior_confidence, self.mean[rows], y)
        self.length = 0.2 * math.sqrt(max(1, features.shape[1]))
        if len(y) >= 2:
            width = math.sqrt(max(1, int((features.max(0) > features.min(0)).sum())))
            residual = Residual(features[rows], y - self.mean[rows], width, noise)
            self.length = residual.length
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
        self.observed_features = features[all_rows]

    def close(self, positions: Iterable[int]) -> None:
        """Leave these candidates out of every later suggestion (the caller may not offer them)."""
        self.open[np.asarray(list(positions), dtype=np.int64)] = False

    def _shortlist(self, signal: float, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        candidates = np.flatnonzero(self.open)
        if len(candidates) <= SHORTLIST + SHORTLIST_SAMPLE:
            return np.arange(len(self.keys))
        optimistic = self.mean[candidates] - 2.0 * np.sqrt(self.var[candidates] + signal)
        order = np.argsort(optimistic, kind="stable")
        top, rest = candidates[order[:SHORTLIST]], candidates[order[SHORTLIST:]]
        sample = rng.choice(rest, size=min(SHORTLIST_SAMPLE, len(rest)), replace=False)
        # The neighbours of the run's best configurations always: where the run's own outcomes
        # say most, whatever the stored spaces predict there (`search.model.batch`, local).
        near = np.zeros(len(self.keys), dtype=bool)
        for hamming, centres in ((2, self.ranked_observed[:1]), (1, self.ranked_observed[:5])):
            for centre in centres:
                near |= (self.features != centre[None, :]).sum(axis=1) <= hamming
        near &= self.open
        return np.asarray(
            np.unique(np.concatenate([top, sample, np.flatnonzero(near)])), dtype=np.int64
        )

    def acquisition(self) -> FloatArray:
        """Expected improvement (ln units) over the best observation; before one, -mean."""
        sigma = np.sqrt(self.var)
        if self.best is None:
            return np.asarray(-self.mean, dtype=np.float64)
        z = (self.best - self.mean) / sigma
        ei = sigma * (z * ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi))
        return np.asarray(ei, dtype=np.float64)

    def explore_count(self, k: int) -> int:
        """How many of a batch of k explore (`search.model.batch`): none when the memory is
        sure and the run's best still improves."""
        return batch_counts(k, self.confidence, self.stall, self.draw, self.coverage)[1]

    def _picks(self, k: int) -> list[tuple[int, str]]:
        """The batch of `search.model.batch`: exploitation, the incumbent's neighbours once
        the best stalls, and space-filling picks."""
        inputs = BatchInputs(
            self.features,
            self.open,
            self.acquisition(),
            self.mean,
            self.var,
            self.length,
            self.confidence,
            self.observed_features,
            self.ranked_observed,
        )
        return pick_batch(inputs, k, self.stall, self.draw, self.coverage)

    def suggest(self, k: int) -> list[ModelSuggestion]:
        """Up to k untried candidates (`_picks`), exploitation first; none when none is open."""
        score = np.where(self.open, self.acquisition(), -np.inf)
        picks = self._picks(k)
        optimum = float(self.mean.min()) if len(self.mean) else 0.0  # none: no picks either
        chips = {
            chip: round(float(w), 4)
            for chip, w in zip(self.names, self.weights, strict=True)
            if w >= 0.005
        }
        out = []
        for i, purpose in picks:
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
                    confidence=round(self.confidence, 3),
                    purpose=purpose,
                    stall=self.stall,
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
    target: Any = None,
    pooled_share: float = POOLED_SHARE_NEW_KEY,
    noise: Mapping[ConfigKey, float] | None = None,
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
        target: the run's key (`search.model.pooled.KeyContext`); with a pooled model, its
            prediction at this key joins the columns.
        pooled_share: the pooled column's share of the prior weight.
        noise: per observed key, the variance of its ln latency (its timing's squared relative
            error) where the run measured it; the residual GP weighs those observations less.
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
            observed.append((at, math.log(ms), (noise or {}).get(key, 0.0)))
    weights = np.array([max(0.0, float(prior.get(c, 0.0))) for c in model.chips])
    if weights.sum() <= 0:
        weights = np.ones(len(model.chips))
    names: tuple[str, ...] = model.chips
    if model.pooled is not None and target is not None and pooled_share > 0:
        # The pooled model's prediction at this key is one more column holding a share
        # `pooled_share` of the prior weight; the run's outcomes weigh it from then on.
        pooled = model.pooled.predict([keys[i] for i in range(len(keys))], target)
        columns = np.hstack([columns, pooled[:, None]])
        share = min(0.9, max(0.0, pooled_share))
        weights = np.append(weights / weights.sum() * (1.0 - share), share)
        names = (*model.chips, POOLED)
    measured = model.measured[stored].any(axis=1) if len(stored) else np.zeros(0, dtype=bool)
    coverage = float(measured.sum()) / max(1, len(keys))
    return Posterior(
        model,
        keys,
        features,
        columns,
        open_rows,
        observed,
        weights / weights.sum(),
        seed,
        prior_confidence=coverage,
        names=names,
        stall=stall_of(observations),
    )


def _keeps_to(model: FamilyModel, key: ConfigKey, allowed: Mapping[str, Sequence[Any]]) -> bool:
    return all(
        name not in allowed
        or any(v == a and isinstance(v, bool) == isinstance(a, bool) for a in allowed[name])
        for name, v in zip(model.params, key, strict=True)
    )
