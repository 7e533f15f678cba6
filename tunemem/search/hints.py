"""Lesson hints in a task's parameter space: the pure helpers of `search.suggest`.

`Hints` gathers the exemplar configurations, parameter preferences and failure patterns of a
set of retrieved lessons; `project` expresses a lesson's configuration in a task's space,
snapping foreign values to the nearest allowed one.

Values are compared as the service compares them (`same`, `identity`): 1 and 1.0 are one value,
true and 1 are two, though Python calls them equal; so a space of `[0, false]` has two
configurations and the search never loops over one it cannot tell apart. A hint is stored free
JSON: a part the suggester cannot use (a list where a value goes, a statistic that is not a
number) is left out and named in `Hints.skipped`, never failing the request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Space = Mapping[str, tuple[Any, ...]]
Key = tuple[Any, ...]

HARD_FAILURE_RATE = 0.5
_SCALARS = (bool, int, float, str)


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
    # False for a failure from a resource limit its chip has and the target lacks
    # (`retrieval.limits`): its settings are not avoided there.
    avoid_applies: bool = True


def config_key(space: Mapping[str, Any], config: Mapping[str, Any]) -> Key:
    """A configuration as a tuple of its values in the space's parameter order."""
    return tuple(config.get(name) for name in space)


def identity(key: Key) -> Key:
    """A key as a set member under the service's value identity (true and 1 differ)."""
    return tuple((type(v) is bool, v) for v in key)


def same(a: Any, b: Any) -> bool:
    """Equal as parameter values: 1 and 1.0 are, true and 1 are not."""
    return (type(a) is bool) == (type(b) is bool) and a == b


def position(value: Any, allowed: tuple[Any, ...]) -> int | None:
    """Where `value` is among the allowed values (by `same`), or None."""
    for i, candidate in enumerate(allowed):
        if same(value, candidate):
            return i
    return None


def is_scalar(value: Any) -> bool:
    """A usable parameter value: a boolean, a finite number or a string."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, _SCALARS)


def _number(value: Any) -> float | None:
    """A statistic as a finite float, or None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def space_size(space: Space) -> int:
    return math.prod(max(1, len(values)) for values in space.values())


def snap(value: Any, allowed: tuple[Any, ...]) -> Any | None:
    """The allowed value equal to `value` (by `same`), or the numerically nearest one, or None
    (a boolean never stands for a number, nor a number for a boolean)."""
    at = position(value, allowed)
    if at is not None:
        return allowed[at]
    numeric = [a for a in allowed if isinstance(a, int | float) and not isinstance(a, bool)]
    if _number(value) is not None and numeric:
        return min(numeric, key=lambda a: abs(float(a) - float(value)))
    return None


def project(
    hint_config: Mapping[str, Any],
    space: Space,
    base: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """A lesson's configuration expressed in this task's space (missing values from `base`);
    None when none of its values fits the space."""
    config: dict[str, Any] = {}
    fits = False
    for name, allowed in space.items():
        value = snap(hint_config[name], allowed) if name in hint_config else None
        fits = fits or value is not None
        if value is None:
            value = base[name] if base and name in base else allowed[0]
        config[name] = value
    return config if fits else None


def _matches(config: Mapping[str, Any], pattern: Mapping[str, Any]) -> bool:
    return bool(pattern) and all(k in config and same(config[k], v) for k, v in pattern.items())


def _scalar_config(value: Any) -> bool:
    """An object of scalar values (null too: it only leaves the parameter to the base)."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and (v is None or is_scalar(v)) for k, v in value.items()
    )


class Hints:
    """Exemplars, preferences and exclusions gathered from a set of lessons."""

    def __init__(self, lessons: Iterable[HintedLesson]) -> None:
        self.exemplars: list[tuple[HintedLesson, dict[str, Any]]] = []
        self.prefer: list[tuple[HintedLesson, str, Any, float]] = []
        self.soft_avoid: list[tuple[str, Any]] = []
        self.hard_avoid: list[dict[str, Any]] = []
        self.skipped: list[tuple[str, str]] = []  # (lesson id, the part left out and why)
        for lesson in lessons:
            hint = lesson.hint if isinstance(lesson.hint, Mapping) else {}
            self._gather(lesson, hint)

    def _skip(self, lesson: HintedLesson, why: str) -> None:
        self.skipped.append((lesson.id, why))

    def _gather(self, lesson: HintedLesson, hint: Mapping[str, Any]) -> None:
        if "config" in hint:
            if _scalar_config(hint["config"]):
                self.exemplars.append((lesson, hint["config"]))
            else:
                self._skip(lesson, "hint.config is not an object of scalar values")
        if "param" in hint and "value" in hint:
            weight = _number(hint.get("median_speedup") or 1.0)
            if not is_scalar(hint["value"]) or not isinstance(hint["param"], str):
                self._skip(lesson, "hint.param is not a name or hint.value not a scalar")
            elif weight is None:
                self._skip(lesson, "hint.median_speedup is not a number")
            elif hint.get("effect", "prefer") == "prefer":
                self.prefer.append((lesson, hint["param"], hint["value"], weight))
            else:
                self.soft_avoid.append((hint["param"], hint["value"]))
        if "avoid" in hint and not lesson.avoid_applies:
            self._skip(lesson, "hint.avoid: a resource limit of its chip that the target lacks")
        elif "avoid" in hint:
            # Only a pattern that fails more often than not is excluded outright.
            rate = _number(hint.get("failure_rate") or 0.0)
            if not _scalar_config(hint["avoid"]):
                self._skip(lesson, "hint.avoid is not an object of scalar values")
            elif rate is None:
                self._skip(lesson, "hint.failure_rate is not a number")
            elif rate >= HARD_FAILURE_RATE:
                self.hard_avoid.append(dict(hint["avoid"]))
            else:
                self.soft_avoid.extend(hint["avoid"].items())

    def excluded(self, config: Mapping[str, Any]) -> bool:
        return any(_matches(config, pattern) for pattern in self.hard_avoid)

    def preference(self, config: Mapping[str, Any]) -> float:
        score = sum(1.0 for _, p, v, _ in self.prefer if p in config and same(config[p], v))
        return score - sum(1.0 for p, v in self.soft_avoid if p in config and same(config[p], v))
