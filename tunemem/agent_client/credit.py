"""Which returned lessons an attempt credits when it is reported.

The lesson whose hint produced the configuration is credited (the proposal's `used`), and so is
every parameter-setting lesson of the same retrieval that recommends a setting the tried
configuration carries ("prefer use_shmem=1" when `use_shmem` is 1): such a lesson applies to
many configurations, and its value on a chip is what configurations carrying it earned there.
"Avoid" lessons are not credited: following one means not carrying a setting, which nearly
every configuration does.
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
