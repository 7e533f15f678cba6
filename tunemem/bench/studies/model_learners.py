"""Which library for the performance model's per-chip columns: training time and held-out rank
quality of gradient-boosted trees (LightGBM, scikit-learn, XGBoost) and extremely randomised
trees, on recorded search spaces.

`python -m tunemem.bench.studies.model_learners [--caches DIR ...] [--out PATH]`: for the first two
chips of
each family, train on 5% and on 80% of the chip's feasible configurations (parameters encoded as
the model encodes them, target ln latency) and report the fit time and, on the rest, Spearman's
rank correlation and the share of the true best 1% among the predicted best 5%. A library that
is not installed is skipped (XGBoost is not a dependency: `pip install xgboost-cpu` to include
it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from tunemem.bench.common.paths import KERNELTUNER_CACHES, RESULTS_OF
from tunemem.bench.common.results import machine, memory_held
from tunemem.bench.learning.tasks import discover_tasks

DEFAULT = KERNELTUNER_CACHES


def _learners() -> dict[str, Any]:
    from sklearn.ensemble import ExtraTreesRegressor, HistGradientBoostingRegressor

    out: dict[str, Any] = {
        "sklearn-hgb": lambda: HistGradientBoostingRegressor(
            max_iter=300, learning_rate=0.1, max_leaf_nodes=63, random_state=0
        ),
        "sklearn-extratrees": lambda: ExtraTreesRegressor(
            n_estimators=100, min_samples_leaf=2, n_jobs=1, random_state=0
        ),
    }
    if importlib.util.find_spec("lightgbm"):
        import lightgbm

        out["lightgbm"] = lambda: lightgbm.LGBMRegressor(
            n_estimators=300, learning_rate=0.1, num_leaves=63, n_jobs=1, verbose=-1, random_state=0
        )
    if importlib.util.find_spec("xgboost"):
        import xgboost

        out["xgboost"] = lambda: xgboost.XGBRegressor(
            n_estimators=300, learning_rate=0.1, max_depth=8, n_jobs=1, random_state=0
        )
    return out


def _encode(recording: Any) -> tuple[np.ndarray, np.ndarray]:
    rows, y = [], []
    for key, m in recording.measurements.items():
        if m.latency_ms:
            rows.append(
                [
                    math.log2(v)
                    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0
                    else float(v)
                    for v in key
                ]
            )
            y.append(math.log(m.latency_ms))
    return np.array(rows, dtype=float), np.array(y)


def run(folders: list[Path]) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for folder in folders:
        for task in discover_tasks([folder])[:2]:
            x, y = _encode(task.recording)
            order = np.random.default_rng(0).permutation(len(y))
            for share in (0.05, 0.8):
                n = int(share * len(y))
                train, test = order[:n], order[n:]
                best = set(test[np.argsort(y[test])[: max(1, len(test) // 100)]].tolist())
                for name, make in _learners().items():
                    learner = make()
                    started = time.perf_counter()
                    learner.fit(x[train], y[train])
                    fit_s = time.perf_counter() - started
                    predicted = learner.predict(x[test])
                    top = set(test[np.argsort(predicted)[: max(1, len(test) // 20)]].tolist())
                    row = {
                        "learner": name,
                        "task": task.name,
                        "train": n,
                        "fit_s": round(fit_s, 3),
                        "spearman": round(float(spearmanr(predicted, y[test]).statistic), 4),
                        "best_1pct_in_predicted_5pct": round(len(best & top) / len(best), 3),
                    }
                    print(row, flush=True)
                    results.append(row)
    held = memory_held("none", "the learners are fitted on samples of each recorded space")
    return {
        "benchmark": "model_learners",
        "memory_held": held,
        "machine": machine(),
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caches", type=Path, action="append")
    parser.add_argument("--out", type=Path, default=RESULTS_OF["studies"] / "model-learners.json")
    args = parser.parse_args()
    folders = args.caches or [DEFAULT / "convolution", DEFAULT / "dedispersion"]
    report = run(folders)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
