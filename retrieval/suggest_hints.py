"""Lesson hints in a task's parameter space: the pure helpers of `retrieval.suggest`.

`Hints` gathers the exemplar configurations, parameter preferences and failure patterns of a
set of retrieved lessons; `project` expresses a lesson's configuration in a task's space,
snapping foreign values to the nearest allowed one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Space = Mapping[str, tuple[Any, ...]]
Key = tuple[Any, ...]

HARD_FAILURE_RATE = 0.5


@dataclass(frozen=True)
class HintedLesson:
    """A retrieved lesson as the suggester sees it: its hint, where it was recorded, its rank
    score (z-scored within the retrieval's pool) and whether it crossed a backend."""

    id: str
    hint: Mapping[str, Any] | None
    chips: tuple[str, ...] = ()
    score: float = 0.0
    transferred: bool = False
    text: str = ""


def config_key(space: Mapping[str, Any], config: Mapping[str, Any]) -> Key:
    """A configuration as a tuple of its values in the space's parameter order."""
    return tuple(config.get(name) for name in space)


def space_size(space: Space) -> int:
    return math.prod(max(1, len(values)) for values in space.values())


def snap(value: Any, allowed: tuple[Any, ...]) -> Any | None:
    """The allowed value equal to `value`, or the numerically nearest one, or None."""
    if value in allowed:
        return value
    numeric = [a for a in allowed if isinstance(a, int | float) and not isinstance(a, bool)]
    if isinstance(value, int | float) and not isinstance(value, bool) and numeric:
        return min(numeric, key=lambda a: abs(a - value))
    return None


def project(
    hint_config: Mapping[str, Any],
    space: Space,
    base: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """A lesson's configuration expressed in this task's space (missing values from `base`)."""
    if not any(name in hint_config for name in space):
        return None
    config: dict[str, Any] = {}
    for name, allowed in space.items():
        value = snap(hint_config[name], allowed) if name in hint_config else None
        if value is None:
            value = base[name] if base and name in base else allowed[0]
        config[name] = value
    return config


def _matches(config: Mapping[str, Any], pattern: Mapping[str, Any]) -> bool:
    return bool(pattern) and all(config.get(k) == v for k, v in pattern.items())


class Hints:
    """Exemplars, preferences and exclusions gathered from a set of lessons."""

    def __init__(self, lessons: Iterable[HintedLesson]) -> None:
        self.exemplars: list[tuple[HintedLesson, dict[str, Any]]] = []
        self.prefer: list[tuple[HintedLesson, str, Any, float]] = []
        self.soft_avoid: list[tuple[str, Any]] = []
        self.hard_avoid: list[dict[str, Any]] = []
        for lesson in lessons:
            hint = lesson.hint or {}
            if isinstance(hint.get("config"), dict):
                self.exemplars.append((lesson, hint["config"]))
            if "param" in hint and "value" in hint:
                weight = float(hint.get("median_speedup") or 1.0)
                if hint.get("effect", "prefer") == "prefer":
                    self.prefer.append((lesson, str(hint["param"]), hint["value"], weight))
                else:
                    self.soft_avoid.append((str(hint["param"]), hint["value"]))
            if isinstance(hint.get("avoid"), dict):
                # Only a pattern that fails more often than not is excluded outright.
                rate = float(hint.get("failure_rate") or 0.0)
                if rate >= HARD_FAILURE_RATE:
                    self.hard_avoid.append(dict(hint["avoid"]))
                else:
                    self.soft_avoid.extend(hint["avoid"].items())

    def excluded(self, config: Mapping[str, Any]) -> bool:
        return any(_matches(config, pattern) for pattern in self.hard_avoid)

    def preference(self, config: Mapping[str, Any]) -> float:
        score = sum(1.0 for _, p, v, _ in self.prefer if config.get(p) == v)
        return score - sum(1.0 for p, v in self.soft_avoid if config.get(p) == v)
