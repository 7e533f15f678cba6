"""Which returned lessons an attempt credits when it is reported.

The lesson whose hint produced the configuration is credited (the proposal's `used`), and so is
every parameter-setting lesson of the same retrieval that recommends a setting the tried
configuration carries ("prefer use_shmem=1" when `use_shmem` is 1): such a lesson applies to
many configurations, and its value on a chip is what configurations carrying it earned there.
"Avoid" lessons are not credited: following one means not carrying a setting, which nearly
every configuration does. The service judges each credited lesson against the configuration
the report carries (`retrieval.credit`). Also here: how a report shows a credited lesson, and
the spread of the timings a runner measured, as the report sends it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def carried_settings(lessons: Iterable[Mapping[str, Any]], config: Mapping[str, Any]) -> list[str]:
    """Ids of the "prefer" setting lessons whose parameter `config` sets to their value."""
    out = []
    for lesson in lessons:
        hint = lesson.get("hint") or {}
        if "config" in hint or "param" not in hint or "value" not in hint:
            continue
        if hint.get("effect", "prefer") != "prefer":
            continue
        param = str(hint["param"])
        if param in config and str(config[param]) == str(hint["value"]):
            out.append(str(lesson["id"]))
    return out


def credited(
    used: Iterable[str], lessons: Iterable[Mapping[str, Any]], config: Mapping[str, Any]
) -> list[str]:
    """The proposal's lessons first, then the carried setting lessons, each id once."""
    return list(dict.fromkeys([*used, *carried_settings(lessons, config)]))


def lesson_summary(lesson: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """How a report shows a lesson it credited: its score, its value before and after."""
    breakdown = lesson.get("breakdown") or {}
    return {
        "id": lesson["id"],
        "kind": lesson["kind"],
        "text": lesson.get("rendered_text") or lesson.get("text", ""),
        "score": lesson.get("score"),
        "value": breakdown.get("value"),
        "value_scope": breakdown.get("value_scope"),
        "estimator": breakdown.get("estimator"),
        "n": breakdown.get("n"),
        "value_after": values.get(lesson["id"]),
    }


def timing_spread(result: dict[str, Any]) -> dict[str, Any]:
    """The spread of the timings behind a result's latency and their count, where the runner
    measured them (`latency_std_ms`, as the harness and the replay of a cache report it)."""
    spread = (result.get("metrics") or {}).get("latency_std_ms")
    repetitions = result.get("repetitions")
    if result.get("latency_ms") is None or not isinstance(spread, int | float) or spread < 0:
        return {}
    count = repetitions if isinstance(repetitions, int) and repetitions >= 1 else None
    return {"latency_spread_ms": float(spread), "repetitions": count}
