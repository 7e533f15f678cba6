"""The ranking knobs, each declared once: name, description, service default, bounds, and the
settings object it feeds.

Everything else is made from this table (as Kernel Tuner's strategies make their docs from
their `_options` table): the service's environment settings (`TUNEMEM_<NAME>`,
`memory_service.core.settings`), the per-request overrides (`RetrieveOptions`), the echo in
every retrieve answer, the settings objects of one retrieval (`RankingSettings` and its
`GeneralisedSettings`) and the knob table of docs/ranking.md.

The defaults here are the service's; the dataclasses' own defaults are the neutral values of
the pure functions, which the service never relies on (`ranking_settings` passes every field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.ranking import RankingSettings

KnobValue = bool | int | float | str
Feeds = Literal["ranking", "generalised"]
RANKING: tuple[Feeds, ...] = ("ranking",)
GENERALISED: tuple[Feeds, ...] = ("generalised",)
BOTH: tuple[Feeds, ...] = ("ranking", "generalised")


@dataclass(frozen=True)
class Knob:
    """One ranking knob.

    `low`/`high` bound a number (`open_low`: strictly above `low`), `choices` a string;
    `per_request` says whether a retrieve may override it (q0 may not: it is also where every
    lesson's learned value starts, so a request cannot change it alone).
    """

    description: str
    default: KnobValue
    feeds: tuple[Feeds, ...]
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple[str, ...] = ()
    per_request: bool = True

    @property
    def kind(self) -> type:
        return type(self.default)

    def bounds_text(self) -> str:
        if self.choices:
            return " or ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        low = "" if self.low is None else f"{self.low:g} {'<' if self.open_low else '≤'} "
        high = "" if self.high is None else f" ≤ {self.high:g}"
        return f"{low}{self.kind.__name__}{high}"


KNOBS: dict[str, Knob] = dict(
    lam=Knob("weight of value against similarity in the score", 0.5, RANKING, 0.0, 1.0),
    k=Knob("lessons returned per retrieval (per request: the request's `k`)", 3, RANKING, 1, 100),
    k_recall=Knob("candidates recalled before gating; 0 = automatic", 0, RANKING, 0, 1000),
    similarity_floor=Knob("delta: the least cosine a candidate needs", 0.1, RANKING, -1.0, 1.0),
    exploration_c=Knob("UCB exploration coefficient", 0.3, RANKING, 0.0, 10.0),
    z_clip=Knob("z-scores are clipped to ±z_clip", 3.0, RANKING, 0.0, 100.0, open_low=True),
    q0=Knob(
        "neutral prior value (also where a new lesson's learned value starts)",
        0.0,
        BOTH,
        -1.0,
        1.0,
        per_request=False,
    ),
    kappa=Knob(
        "strength of the prior and of each shrinkage step (pseudo-observations)",
        2.0,
        BOTH,
        0.0,
        1000.0,
    ),
    backoff=Knob(
        "chain values shrink down the scope chain (false: the chip scope only)", True, RANKING
    ),
    values=Knob(
        "value estimate: chain (own outcomes down the scope chain) or generalised (also"
        " recorded reach, neighbour chips, source prior)",
        "generalised",
        RANKING,
        choices=("chain", "generalised"),
    ),
    value_floor=Knob("the smallest spread z(value) standardises by", 0.1, RANKING, 0.0, 2.0),
    recorded_weight=Knob(
        "generalised: weight of one recorded reach or effect on a chip exactly like the target",
        1.0,
        GENERALISED,
        0.0,
        100.0,
    ),
    outcome_weight=Knob(
        "generalised: weight of one reported outcome on a chip exactly like the target",
        1.0,
        GENERALISED,
        0.0,
        100.0,
    ),
    source_weight=Knob(
        "generalised: the most a source chip's track record can weigh", 2.0, GENERALISED, 0.0, 100.0
    ),
    affinity_kappa=Knob(
        "generalised: lessons recorded on both chips at which their agreement weighs as much"
        " as their descriptors",
        5.0,
        GENERALISED,
        0.0,
        1000.0,
    ),
    affinity_floor=Knob(
        "generalised: the least weight any other chip's evidence gets", 0.1, GENERALISED, 0.0, 1.0
    ),
    claim_power=Knob(
        "generalised: how sharply a recorded space whose claims failed to reproduce loses weight"
        " (trust ** power; 0 = never)",
        0.0,
        GENERALISED,
        0.0,
        8.0,
    ),
    claim_kappa=Knob(
        "generalised: reproductions at which a space's record weighs as much as its prior trust",
        2.0,
        GENERALISED,
        0.0,
        100.0,
        open_low=True,
    ),
)


def check(name: str, value: object) -> KnobValue:
    """The value, if `name` is a knob and the value is of its type and within its bounds.

    Raises:
        ValueError: naming the valid knobs, or the knob's bounds.
    """
    knob = KNOBS.get(name)
    if knob is None:
        raise ValueError(f"unknown ranking knob {name!r}; valid: {', '.join(KNOBS)}")
    kind = knob.kind
    numeric = kind in (int, float) and isinstance(value, int | float)
    if isinstance(value, bool) != (kind is bool) or not (isinstance(value, kind) or numeric):
        raise ValueError(f"ranking knob {name} takes {knob.bounds_text()}, not {value!r}")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(f"ranking knob {name} takes {knob.bounds_text()}, not {value!r}")
    ok = True
    if knob.choices:
        ok = value in knob.choices
    elif isinstance(value, int | float) and not isinstance(value, bool):
        ok = value == value and (knob.high is None or value <= knob.high)  # NaN is not ok
        if knob.low is not None:
            ok = ok and (value > knob.low if knob.open_low else value >= knob.low)
    if not ok:
        raise ValueError(f"ranking knob {name} takes {knob.bounds_text()}, not {value!r}")
    return kind(value)  # type: ignore[no-any-return]  # bool | int | float | str


def resolve(base: Mapping[str, object], overrides: Mapping[str, object]) -> dict[str, KnobValue]:
    """Every knob's value: `base` (the service's settings) with `overrides` (not None) over it."""
    values = {name: base[name] for name in KNOBS}
    values.update({name: v for name, v in overrides.items() if v is not None})
    return {name: check(name, v) for name, v in values.items()}


def _fed(target: type, values: Mapping[str, KnobValue]) -> dict[str, KnobValue]:
    name = "ranking" if target is RankingSettings else "generalised"
    wanted = {f.name for f in fields(target)}
    return {k: v for k, v in values.items() if name in KNOBS[k].feeds and k in wanted}


def ranking_settings(values: Mapping[str, KnobValue]) -> RankingSettings:
    """The settings of one retrieval from every knob's value (`resolve`)."""
    generalised = GeneralisedSettings(**_fed(GeneralisedSettings, values))  # type: ignore[arg-type]
    return RankingSettings(**_fed(RankingSettings, values), generalised=generalised)  # type: ignore[arg-type]


def echo(settings: RankingSettings) -> dict[str, KnobValue]:
    """Every knob's value in a retrieval's settings, as the retrieve answer echoes it."""
    out: dict[str, KnobValue] = {}
    for name, knob in KNOBS.items():
        source = settings if knob.feeds[0] == "ranking" else settings.generalised
        out[name] = getattr(source, name)
    return out


def markdown_table() -> str:
    """The knob table of docs/ranking.md."""
    lines = [
        "| knob (`TUNEMEM_<NAME>`) | default | values | feeds | per request | what it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, knob in KNOBS.items():
        default = str(knob.default).lower() if knob.kind is bool else f"{knob.default}"
        request = "yes" if knob.per_request else "no"
        feeds = ", ".join(knob.feeds)
        lines.append(
            f"| `{name}` | {default} | {knob.bounds_text()} | {feeds} | {request} |"
            f" {knob.description} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
