"""A performance model over a kernel family's configurations, learned from stored search spaces.

Pure: given the measured configurations of one kernel family (an op with one set of parameter
names) on every chip the memory holds, `build_family_model` returns a `FamilyModel`:

- the candidate configurations: every configuration some chip measured as feasible (the stored
  spaces say which combinations the kernel's restrictions allow; a product of the parameter
  values holds many that no tuning script would run);
- per chip, a column of normalised latencies over the candidates, ln(latency / the chip's
  median latency), so chips of different speed are comparable: the measured value where the
  chip measured the configuration, a gradient-boosted model's prediction where it did not
  (LightGBM, one model per chip over the encoded parameters), the chip's worst where it
  measured the configuration as failing;
- the chip descriptors, which `search.model_search` turns into prior weights of the columns
  before the run's own observations can weigh them.

The model is a cache: rebuilt from the stored attempts whenever they change, never a second
source of truth. Given the same measurements and seed, the build is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tunemem.search.model.encoding import ConfigKey as ConfigKey
from tunemem.search.model.encoding import FloatArray as FloatArray
from tunemem.search.model.encoding import ParamEncoding as ParamEncoding
from tunemem.search.model.encoding import _same

# Gradient boosting settings of the per-chip models (chosen on the development data, see
# docs/ranking.md): enough trees to fit thousands of configurations, small enough to train a
# 70,000-configuration family in seconds on one core.
GBM_TREES = 200
GBM_LEAVES = 63
GBM_LEARNING_RATE = 0.1
# A chip with fewer feasible measurements than this gets no model: its column holds its
# measurements and, elsewhere, its median (0 after normalisation).
MIN_TRAINING_ROWS = 20


@dataclass(frozen=True)
class ChipSpace:
    """One chip's stored measurements of a family: configuration keys in the family's parameter
    order, each with its latency in ms (None: measured as failing)."""

    chip: str
    measurements: Mapping[ConfigKey, float | None]
    # The key the space was measured at (sizes, dtype, chip), for the pooled model
    # (`search.model.pooled`); None: the space takes no part in it.
    key: Any = None


@dataclass
class FamilyModel:
    """The trained cache of one family: candidates, their features and one column per chip."""

    params: tuple[str, ...]
    chips: tuple[str, ...]
    encodings: tuple[ParamEncoding, ...]
    keys: list[ConfigKey]
    features: FloatArray  # (candidates, params), each in [0, 1]
    columns: FloatArray  # (candidates, chips): ln(latency / chip median)
    measured: npt.NDArray[np.bool_]  # (candidates, chips): the chip measured it (ok or failed)
    feasible_chips: npt.NDArray[np.int64]  # (candidates,): chips that measured it feasible
    importance: dict[str, float]  # share of the per-chip models' split gain per parameter
    codes: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    seed: int = 0
    learners: dict[str, Any] = field(default_factory=dict, repr=False)
    pooled: Any = field(default=None, repr=False)  # a `search.model.pooled.PooledModel`
    index: dict[ConfigKey, int] = field(default_factory=dict, repr=False)
    # Each column's key (`search.model.pooled.KeyContext`), where its space said, and the
    # pairs' evidence of how far a key's measurements carry (`search.model.reach`).
    contexts: dict[str, Any] = field(default_factory=dict, repr=False)
    reach_evidence: list[tuple[float, float]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {key: i for i, key in enumerate(self.keys)}
        if self.codes.shape != (len(self.keys), len(self.encodings)):
            # Each candidate's value of each parameter as its position among the known values,
            # so a caller's space restricts the candidates with array operations.
            self.codes = np.array(
                [
                    [enc.values.index(v) for enc, v in zip(self.encodings, key, strict=True)]
                    for key in self.keys
                ],
                dtype=np.int64,
            ).reshape(len(self.keys), len(self.encodings))

    def allowed_rows(self, allowed: Mapping[str, Sequence[Any]]) -> npt.NDArray[np.bool_]:
        """Which candidates keep to the allowed values (a parameter not named: any value)."""
        mask = np.ones(len(self.keys), dtype=bool)
        for j, enc in enumerate(self.encodings):
            if enc.name in allowed:
                values = allowed[enc.name]
                ok = np.array([any(_same(v, a) for a in values) for v in enc.values], dtype=bool)
                mask &= ok[self.codes[:, j]]
        return mask

    @property
    def size(self) -> int:
        return len(self.keys)

    def encode(self, keys: Sequence[ConfigKey]) -> FloatArray:
        """Features of configurations (one row per key, parameters in the family's order)."""
        rows = [[enc.encode(v) for enc, v in zip(self.encodings, key, strict=True)] for key in keys]
        return np.asarray(rows, dtype=np.float64).reshape(len(keys), len(self.encodings))

    def predict_columns(self, keys: Sequence[ConfigKey]) -> FloatArray:
        """Every chip's column at configurations that are not candidates (the chip's model, or
        0, its median, where it has none)."""
        features = self.encode(keys)
        out = np.zeros((len(keys), len(self.chips)), dtype=np.float64)
        for j, chip in enumerate(self.chips):
            learner = self.learners.get(chip)
            if learner is not None and len(keys):
                out[:, j] = np.asarray(learner.predict(features), dtype=np.float64)
        return out


LEARNERS = ("lightgbm", "sklearn")


def _learner(kind: str, seed: int) -> Any:
    if kind == "sklearn":
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(
            max_iter=GBM_TREES,
            max_leaf_nodes=GBM_LEAVES,
            learning_rate=GBM_LEARNING_RATE,
            early_stopping=False,
            random_state=seed,
        )
    if kind != "lightgbm":
        raise ValueError(f"unknown learner {kind!r}; valid: {', '.join(LEARNERS)}")
    import lightgbm

    return lightgbm.LGBMRegressor(
        n_estimators=GBM_TREES,
        num_leaves=GBM_LEAVES,
        learning_rate=GBM_LEARNING_RATE,
        n_jobs=1,
        random_state=seed,
        deterministic=True,
        force_row_wise=True,
        verbose=-1,
    )


def build_family_model(
    params: Sequence[str], spaces: Sequence[ChipSpace], seed: int = 0, learner: str = "lightgbm"
) -> FamilyModel | None:
    """Train the family's model from every chip's stored measurements.

    Args:
        params: the family's parameter names, in the order of the configuration keys.
        spaces: one `ChipSpace` per chip (two spaces of one chip are merged, the later wins).
        seed: the boosting's seed (the build is deterministic for a seed).
        learner: `lightgbm` (the default) or `sklearn` (HistGradientBoostingRegressor).

    Returns:
        The model, or None when no chip measured any feasible configuration.
    """
    merged: dict[str, dict[ConfigKey, float | None]] = {}
    keyed: dict[str, Any] = {}
    for space in spaces:
        merged.setdefault(space.chip, {}).update(space.measurements)
        if space.key is not None:
            keyed[space.chip] = space.key
    chips = tuple(sorted(merged))
    keys = sorted(
        {key for chip in chips for key, ms in merged[chip].items() if ms is not None and ms > 0},
        key=repr,
    )
    if not keys:
        return None
    encodings = tuple(
        ParamEncoding.of(name, [key[i] for chip in chips for key in merged[chip]])
        for i, name in enumerate(params)
    )
    model = FamilyModel(
        params=tuple(params),
        chips=chips,
        encodings=encodings,
        keys=keys,
        features=np.zeros((0, len(params))),
        columns=np.zeros((len(keys), len(chips))),
        measured=np.zeros((len(keys), len(chips)), dtype=bool),
        feasible_chips=np.zeros(len(keys), dtype=np.int64),
        importance={},
        seed=seed,
    )
    model.features = model.encode(keys)
    model.contexts = dict(keyed)
    gains = np.zeros(len(params))
    for j, chip in enumerate(chips):
        gains += _fill_column(model, j, merged[chip], seed, learner)
    if keyed:
        from tunemem.search.model.pooled import KeyedSpace, build_pooled

        model.pooled = build_pooled(
            params,
            encodings,
            [KeyedSpace(keyed[chip], merged[chip]) for chip in chips if chip in keyed],
            seed,
        )
    total = float(gains.sum())
    model.importance = {
        name: round(float(g) / total, 4) if total > 0 else 0.0
        for name, g in zip(params, gains, strict=True)
    }
    return model


def _fill_column(
    model: FamilyModel,
    j: int,
    measurements: Mapping[ConfigKey, float | None],
    seed: int,
    kind: str,
) -> FloatArray:
    """Column j of the model from one chip's measurements; returns its model's split gains."""
    rows = [(model.index[k], ms) for k, ms in measurements.items() if k in model.index]
    ok = [(i, math.log(ms)) for i, ms in rows if ms is not None and ms > 0]
    failed = [i for i, ms in rows if ms is None or ms <= 0]
    if not ok:
        return np.zeros(len(model.params))
    logs = np.array([y for _, y in ok])
    median = float(np.median(logs))
    worst = float(logs.max()) - median
    filled = np.zeros(model.size, dtype=np.float64)
    gains = np.zeros(len(model.params))
    if len(ok) >= MIN_TRAINING_ROWS:
        index = np.array([i for i, _ in ok])
        learner = _learner(kind, seed)
        learner.fit(model.features[index], logs - median)
        model.learners[model.chips[j]] = learner
        filled = np.asarray(learner.predict(model.features), dtype=np.float64)
        gains = _gains(learner, len(model.params))
    for i, y in ok:
        filled[i] = y - median
        model.measured[i, j] = True
        model.feasible_chips[i] += 1
    for i in failed:
        filled[i] = worst
        model.measured[i, j] = True
    model.columns[:, j] = filled
    return gains


def _gains(learner: Any, n: int) -> FloatArray:
    """Split gain per feature (LightGBM's own; for scikit-learn, summed over its trees)."""
    booster = getattr(learner, "booster_", None)
    if booster is not None:
        return np.asarray(booster.feature_importance(importance_type="gain"), dtype=np.float64)
    gains = np.zeros(n)
    for predictors in getattr(learner, "_predictors", []):
        for tree in predictors:
            nodes = tree.nodes
            inner = nodes["is_leaf"] == 0
            np.add.at(gains, nodes["feature_idx"][inner], nodes["gain"][inner])
    return gains
