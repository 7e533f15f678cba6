"""The trend of the remembered best configurations along the key's sizes, carried to a new key.

Pure. The memory's exemplars are the best configurations of the keys it stored; at a key beyond
all of them (a batch size 16 times the largest seen) each is the best of a key unlike this one.
Their trend is not: when the stored keys' best tiles grow with the size, a larger size wants
larger tiles still. `trend_configs` fits, per numeric parameter, the log2 of the value in the
stored keys' best configurations to their log2 sizes (ridge regression, the intercept free),
predicts it at the new key, and returns the caller's valid configurations nearest that
prediction (distance in log2 of each parameter, each scaled by the span of its allowed values),
nearest first. A parameter that is not numeric takes the most common value of the exemplars.

Nothing is predicted without at least `MIN_POINTS` exemplars whose keys share a size with the new
key and vary along one, or for a key inside the span of the stored keys along every size
(`beyond`): there the exemplars of its neighbours already say what the trend would.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MIN_POINTS = 3
RIDGE = 1.0  # shrinkage of each size's slope (log2 units): a few keys give a rough trend


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def beyond(target: Mapping[str, float], stored: Sequence[Mapping[str, float]]) -> float:
    """How far (log2) the target lies outside the stored keys' span along its sizes; 0 inside."""
    out = 0.0
    for name, value in target.items():
        seen = [math.log2(s[name]) for s in stored if name in s]
        if seen and value > 0:
            at = math.log2(value)
            out = max(out, at - max(seen), min(seen) - at)
    return out


def trend_config(
    points: Sequence[tuple[Mapping[str, float], Mapping[str, Any]]],
    target: Mapping[str, float],
    space: Mapping[str, Sequence[Any]],
) -> dict[str, float | Any] | None:
    """Per parameter of the space, the trend's value at `target` (log2 for numeric ones), or
    None when the points say no trend (module docstring)."""
    names = sorted(target)
    usable = [(s, c) for s, c in points if all(n in s and s[n] > 0 for n in names)]
    if len(usable) < MIN_POINTS or not names:
        return None
    x = np.array([[math.log2(s[n]) for n in names] for s, _ in usable])
    varies = x.std(axis=0) > 0
    if not varies.any():
        return None
    x = x[:, varies]
    at = np.array([math.log2(target[n]) for n in names])[varies]
    centre = x.mean(axis=0)
    xc = x - centre
    out: dict[str, float | Any] = {}
    for name, allowed in space.items():
        values = [c.get(name) for _, c in usable]
        if all(_numeric(v) for v in values) and all(_numeric(a) for a in allowed):
            y = np.log2(np.array(values, dtype=float))
            slope = np.linalg.solve(xc.T @ xc + RIDGE * np.eye(xc.shape[1]), xc.T @ (y - y.mean()))
            out[name] = float(y.mean() + (at - centre) @ slope)
        else:
            out[name] = Counter(map(repr, values)).most_common(1)[0][0]
    return out


def trend_configs(
    points: Sequence[tuple[Mapping[str, float], Mapping[str, Any]]],
    target: Mapping[str, float],
    space: Mapping[str, Sequence[Any]],
    valid: Sequence[Mapping[str, Any]],
) -> list[Mapping[str, Any]]:
    """The valid configurations nearest the trend at `target`, nearest first; none when the
    target is inside the stored keys' span or the points say no trend."""
    predicted = None
    for name in sorted(target):
        line = [
            (s, c)
            for s, c in points
            if all(s.get(other) == value for other, value in target.items() if other != name)
        ]
        if beyond({name: target[name]}, [s for s, _ in line]) > 0:
            predicted = trend_config(line, {name: target[name]}, space)
            if predicted is not None:
                break
    if predicted is None:
        return []

    def distance(config: Mapping[str, Any]) -> float:
        total = 0.0
        for name, allowed in space.items():
            want, value = predicted[name], config.get(name)
            if isinstance(want, float) and _numeric(value):
                logs = [math.log2(a) for a in allowed]
                span = max(logs) - min(logs) or 1.0
                total += abs(math.log2(value) - want) / span
            else:
                total += 0.0 if repr(value) == want else 1.0
        return total

    return sorted(valid, key=distance)
