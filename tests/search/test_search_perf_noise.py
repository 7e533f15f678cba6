"""The performance model's residual weighs each observation by its timing's spread: a wide
spread pulls the fit less than a tight one (hand-made points)."""

from __future__ import annotations

import numpy as np

from tunemem.search.model.gp import Residual


def test_a_noisy_observation_pulls_the_residual_less_than_a_tight_one() -> None:
    x = np.array([[0.0], [0.5], [1.0], [1.5]])
    r = np.array([0.0, 0.0, 0.8, 0.0])  # one configuration measured far from the prediction
    tight = Residual(x, r, 1.0, np.zeros(4))
    noisy = Residual(x, r, 1.0, np.array([0.0, 0.0, 0.5, 0.0]))
    at = np.array([[1.0]])
    assert noisy.predict(at)[0][0] < tight.predict(at)[0][0]
    assert Residual(x, r, 1.0).predict(at)[0][0] == tight.predict(at)[0][0]  # none: as before
