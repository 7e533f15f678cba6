"""The drop-in's search of one new key, in rounds: plain data in, plain data out.

`RoundSearch` spends at most a ceiling of timings (the user's `top_k`) on the configurations of
one key. The first round times the memory's best (what it suggests with no observation); each
later round sends every timing of the key so far back with the question (`POST /v1/suggest`
with `observations`), so the memory's performance model refits within the key and its search
moves around the run's own best, and times what comes back. The search stops when the ceiling
is spent, when the memory has nothing new, or when the memory is sure of this key and a round
finds nothing faster: the performance model's confidence (the rank correlation of its
predictions with the key's own timings, which its suggestions carry) is at least `sure` and the
round's best is not faster than the best before it by `min_gain`. A key next to a remembered
one (the model ranks its timings right) stops after the opening and a round or two; a key far
from everything remembered (the model ranks them wrong, or there is no model) spends the
ceiling.

The caller supplies two functions: `ask(observations, k)` (the memory's next k configurations,
or None when it cannot answer) and `bench(keys)` (timings in ms, inf for a failure; the drop-in
passes Triton's own benchmarking, the replay a recorded sweep). Nothing here touches the
network or a GPU.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ConfigId = Hashable


@dataclass(frozen=True)
class Pick:
    """A configuration the memory suggests, with where it came from."""

    config: ConfigId
    origin: str  # "memory:<source>" (exemplar, preference, model, search) or "explore"
    lessons: tuple[str, ...] = ()
    retrieval_id: str | None = None
    confidence: float | None = None  # the model's confidence in this key, where it said


Ask = Callable[[list[tuple[ConfigId, float]], int], list[Pick] | None]
Bench = Callable[[list[ConfigId]], dict[ConfigId, float]]


@dataclass(frozen=True)
class RoundPolicy:
    """How a ceiling of timings is spent in rounds.

    Args:
        opening: share of the ceiling the first round takes (the memory's best, at least one).
        step: share of the ceiling each later round takes (at least one).
        min_gain: a later round whose best is not faster than the best before it by this share
            ends the search, when the memory is sure of the key (0: never ends it early).
        sure: the model's confidence from which the memory counts as sure of the key.
        explore: share of each later round spent on the untimed configurations farthest from
            every one timed so far (space-filling, over the configurations' features; at
            random without features), rounded; 0 leaves exploration to the memory's search.
    """

    opening: float = 0.5
    step: float = 0.25
    min_gain: float = 0.01
    explore: float = 0.0
    sure: float = 0.7

    def __post_init__(self) -> None:
        for name in ("opening", "step", "explore", "sure"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a share between 0 and 1, not {value!r}")
        if self.min_gain < 0.0:
            raise ValueError(f"min_gain is a share >= 0, not {self.min_gain!r}")

    def opening_size(self, ceiling: int) -> int:
        return max(1, min(ceiling, math.ceil(ceiling * self.opening)))

    def step_size(self, ceiling: int) -> int:
        return max(1, math.ceil(ceiling * self.step))


@dataclass
class Round:
    """One round: what was asked for, what was timed and whether it beat the best before."""

    asked: int
    timed: list[ConfigId]
    best_before_ms: float | None
    best_ms: float | None
    confidence: float | None = None

    @property
    def gain(self) -> float | None:
        """How much faster the round's best is than the best before it (share), or None."""
        if self.best_ms is None or self.best_before_ms is None:
            return None
        return self.best_before_ms / self.best_ms - 1.0


@dataclass
class SearchResult:
    """Everything one key's search timed, in timing order, and why it stopped."""

    timings: dict[ConfigId, float] = field(default_factory=dict)
    picks: dict[ConfigId, Pick] = field(default_factory=dict)
    rounds: list[Round] = field(default_factory=list)
    stopped: str = ""

    @property
    def best(self) -> ConfigId | None:
        finite = {c: ms for c, ms in self.timings.items() if math.isfinite(ms)}
        return min(finite, key=lambda c: finite[c]) if finite else None

    def best_ms(self) -> float | None:
        best = self.best
        return None if best is None else self.timings[best]


class RoundSearch:
    """Search one key's configurations in rounds within a ceiling (see the module)."""

    def __init__(
        self,
        configs: Sequence[ConfigId],
        ceiling: int,
        ask: Ask,
        bench: Bench,
        policy: RoundPolicy | None = None,
        seed: Any = 0,
        features: Mapping[Any, Sequence[float]] | None = None,
    ) -> None:
        if ceiling < 1:
            raise ValueError(f"the ceiling is at least one timing, not {ceiling}")
        self.configs = list(dict.fromkeys(configs))
        self.ceiling = min(ceiling, len(self.configs))
        self.ask = ask
        self.bench = bench
        self.policy = policy or RoundPolicy()
        self.rng = random.Random(str(seed))
        self.features = features

    def run(self, opening: list[Pick] | None = None) -> SearchResult:
        """Search; `opening` is the first round's picks when the caller already has them."""
        result = SearchResult()
        known = set(self.configs)
        size = self.policy.opening_size(self.ceiling)
        picks = opening if opening is not None else self.ask([], size)
        while True:
            fresh = self._fresh(picks or [], result, known)
            if not fresh:
                result.stopped = "the memory had nothing new"
                break
            before = result.best_ms()
            timed = self.bench([p.config for p in fresh])
            for pick in fresh:
                result.picks[pick.config] = pick
                result.timings[pick.config] = float(timed.get(pick.config, math.inf))
            said = [p.confidence for p in fresh if p.confidence is not None]
            confidence = said[-1] if said else None
            done = Round(size, [p.config for p in fresh], before, result.best_ms(), confidence)
            result.rounds.append(done)
            left = self.ceiling - len(result.timings)
            if left <= 0:
                result.stopped = "the ceiling is spent"
                break
            if self._sure(result, done, before):
                result.stopped = "the memory is sure of this key and a round found nothing faster"
                break
            size = min(left, self.policy.step_size(self.ceiling))
            observed = list(result.timings.items())
            n_random = round(size * self.policy.explore) if len(result.rounds) else 0
            picks = self.ask(observed, size - n_random) if size > n_random else []
            if picks is None:
                result.stopped = "the memory stopped answering"
                picks = []
                n_random = size
            picks = [*picks, *self._spread(result, picks, n_random)]
        return result

    def _sure(self, result: SearchResult, done: Round, before: float | None) -> bool:
        if len(result.rounds) < 2 or before is None or done.confidence is None:
            return False
        stalled = done.gain is not None and done.gain < self.policy.min_gain
        return stalled and done.confidence >= self.policy.sure

    def _fresh(self, picks: list[Pick], result: SearchResult, known: set[ConfigId]) -> list[Pick]:
        out: list[Pick] = []
        seen: set[ConfigId] = set()
        for pick in picks:
            if pick.config in known and pick.config not in result.timings:
                if pick.config not in seen:
                    out.append(pick)
                    seen.add(pick.config)
        return out[: self.ceiling - len(result.timings)]

    def _spread(self, result: SearchResult, picks: list[Pick], n: int) -> list[Pick]:
        """n untimed configurations, each the farthest from all timed and picked so far."""
        if n <= 0:
            return []
        taken = [*result.timings, *(p.config for p in picks)]
        rest = [c for c in self.configs if c not in set(taken)]
        self.rng.shuffle(rest)  # ties (and no features) go by the seed
        features = self.features
        if features is None:
            return [Pick(c, "explore") for c in rest[:n]]
        points = [tuple(features[c]) for c in taken if c in features]
        out: list[Pick] = []
        for _ in range(min(n, len(rest))):
            far = max(rest, key=lambda c: _nearest(tuple(features[c]), points))
            rest.remove(far)
            points.append(tuple(features[far]))
            out.append(Pick(far, "explore"))
        return out


def _nearest(point: tuple[float, ...], points: list[tuple[float, ...]]) -> float:
    if not points:
        return math.inf
    return min(math.dist(point, other) for other in points)
