"""How a kernel family's configurations become features: the parameter encodings shared by the
per-family model (`search.model.family`) and the pooled model across keys
(`search.model.pooled`). Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
ConfigKey = tuple[Any, ...]


# How many spans of the known values a feature may lie beyond them.
FAR = 1e3


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    """Equal as parameter values: 1 and 1.0 are, True and 1 are not."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


@dataclass(frozen=True)
class ParamEncoding:
    """How one parameter's values become a feature in [0, 1]: numbers by log2 (or linearly
    when some are not positive), other values by their rank among the known values."""

    name: str
    values: tuple[Any, ...]
    log: bool
    low: float
    high: float

    @staticmethod
    def of(name: str, values: Sequence[Any]) -> ParamEncoding:
        distinct = sorted(set(values), key=lambda v: (not _is_number(v), str(type(v)), v))
        numeric = all(_is_number(v) for v in distinct)
        log = numeric and all(float(v) > 0 for v in distinct)
        raw = [
            (math.log2(float(v)) if log else float(v)) if numeric else float(i)
            for i, v in enumerate(distinct)
        ]
        low, high = (min(raw), max(raw)) if raw else (0.0, 1.0)
        return ParamEncoding(name, tuple(distinct), log, low, high)

    def encode(self, value: Any) -> float:
        if _is_number(value) and all(_is_number(v) for v in self.values):
            raw = math.log2(float(value)) if self.log and float(value) > 0 else float(value)
        elif value in self.values:
            raw = float(self.values.index(value))
        else:
            raw = self.low
        span = self.high - self.low
        feature = (raw - self.low) / span if span > 0 else 0.0
        # A value far outside the known ones (a caller's -1e155) is still far, but not so far
        # that a squared distance overflows and the model fails on every request.
        return min(max(feature, -FAR), FAR)
