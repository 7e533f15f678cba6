"""A suggest answer read as untrusted data, for the tuner integrations: only suggestions whose
configuration names exactly the user's parameters, with values of the user's own space (by the
service's value identity: true is not 1), inside the user's restrictions and untried, are kept;
the rest are counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from tunemem.search.hints import identity, position


@dataclass(frozen=True)
class Usable:
    """A suggestion that passed the checks: its configuration, credited lessons and source."""

    config: dict[str, Any]
    lessons: list[str]
    source: str


def suggestion_list(answer: Any) -> tuple[list[dict[str, Any]], int]:
    """The well-formed suggestions of an answer (objects with an object `config`), and how many
    were not."""
    items = answer.get("suggestions") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        return [], 1
    good = [s for s in items if isinstance(s, dict) and isinstance(s.get("config"), dict)]
    return good, len(items) - len(good)


def lesson_ids(suggestion: Mapping[str, Any]) -> list[str]:
    """The credited lessons' ids of a suggestion (strings only; anything else is dropped)."""
    lessons = suggestion.get("lessons")
    if not isinstance(lessons, list):
        return []
    return [
        lesson["id"]
        for lesson in lessons
        if isinstance(lesson, dict) and isinstance(lesson.get("id"), str)
    ][:100]


def usable_suggestions(
    answer: Any,
    space: Mapping[str, Sequence[Any]],
    valid: Iterable[tuple[Any, ...]] | None,
    tried: Iterable[tuple[Any, ...]],
    *,
    known: bool = False,
) -> tuple[list[Usable], int]:
    """The suggestions of `answer` the user's own space admits (see the module), each once, in
    the memory's order; and how many were refused. `known`: `valid` is already a set of
    identity keys (a caller asking many rounds builds it once)."""
    items, refused = suggestion_list(answer)
    names = list(space)
    allowed = {name: tuple(values) for name, values in space.items()}
    valid_keys: AbstractSet[tuple[Any, ...]] | None = None
    if valid is not None:
        valid_keys = (
            valid if known and isinstance(valid, AbstractSet) else {identity(k) for k in valid}
        )
    taken = {identity(key) for key in tried}
    out: list[Usable] = []
    for item in items:
        config = item["config"]
        if set(config) != set(names):
            refused += 1
            continue
        at = [position(config[name], allowed[name]) for name in names]
        if any(i is None for i in at):
            refused += 1
            continue
        # The user's own values (the same objects Kernel Tuner or Triton gave), not the memory's.
        key = tuple(allowed[name][i] for name, i in zip(names, at, strict=True) if i is not None)
        same_key = identity(key)
        if same_key in taken or (valid_keys is not None and same_key not in valid_keys):
            refused += 1
            continue
        taken.add(same_key)
        source = item.get("source")
        out.append(
            Usable(
                dict(zip(names, key, strict=True)),
                lesson_ids(item),
                source if isinstance(source, str) else "",
            )
        )
    return out, refused
