"""Suggestions: the configurations of a task's parameter space that lessons point to, then
search around what the run has measured.

Pure functions over plain data, shared by the agent's structured proposer (one configuration
per attempt) and the service's `POST /v1/suggest` (up to k at once). Order of preference:

1. memory, exemplars: the exemplar configurations of the lessons retrieved now, in the
   service's rank order (credited to that lesson alone, so its value measures how well its
   configuration works here); in the agent's draft stage, same-backend ones first; once
   something works, only lessons ranked above their pool's average, and none from a source
   chip whose configurations already ran poorly here;
2. memory, preferences: a parameter preference of such a lesson applied to the best
   configuration so far, in rank order (its learned value is part of that order);
3. (the service's seam) model-based configurations, when a performance model is given;
4. search (`search_step`; the service's is `search.steps`): one-parameter moves
   around the best so far (towards remembered preferences and exemplars, away from values that
   went badly in this run), remembered exemplars, a random untried configuration.

Failure hints with a high failure rate exclude matching configurations throughout. Only
configurations of the space (and of the caller's `valid` list) neither observed nor offered yet,
told apart by the service's value identity (`identity`: true and 1 are two values). Every loop is
bounded: `suggest` stops at its deadline (`SuggestState.timed_out` then says so), and a random
draw gives up after `RANDOM_DRAWS` tries.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tunemem.search.hints import HARD_FAILURE_RATE as HARD_FAILURE_RATE
from tunemem.search.hints import HintedLesson as HintedLesson
from tunemem.search.hints import Hints as Hints
from tunemem.search.hints import config_key as config_key
from tunemem.search.hints import identity as identity
from tunemem.search.hints import position as position
from tunemem.search.hints import project as project
from tunemem.search.hints import same as same
from tunemem.search.hints import snap as snap
from tunemem.search.hints import space_size as space_size

Space = Mapping[str, tuple[Any, ...]]
Key = tuple[Any, ...]
Source = Literal["exemplar", "preference", "model", "search"]
# Random draws of an untried configuration before the space counts as spent: a draw succeeds
# with probability above 3/4 where it is used, so this only ends a space that has none left.
RANDOM_DRAWS = 2000


@dataclass(frozen=True)
class Observation:
    """One configuration the run has measured, and the lessons credited for it (if known)."""

    config: Mapping[str, Any]
    feasible: bool
    latency_ms: float | None
    used: tuple[str, ...] = ()
    relative_error: float | None = None  # of the latency, where the run measured its spread


@dataclass(frozen=True)
class Suggestion:
    """A configuration, the lessons credited for it, where it came from and why (and, from a
    model, what it predicts for the configuration)."""

    config: dict[str, Any]
    used: tuple[str, ...]
    source: Source
    origin: str
    rationale: str = ""
    prediction: Mapping[str, Any] | None = None


class SpaceExhausted(LookupError):
    """Every configuration of the space (or of the valid list) has been observed or offered."""


@dataclass
class SuggestState:
    """What one round of suggesting knows: the space, the lessons (retrieved now, and seen
    earlier in the run), the run's observations and what has been offered already."""

    space: Space
    stage: str
    lessons: tuple[HintedLesson, ...]
    observations: tuple[Observation, ...]
    seen_lessons: tuple[HintedLesson, ...] = ()
    valid: Sequence[Key] | None = None
    offered: set[Key] = field(default_factory=set)  # identity keys (see `identity`)
    # The agent (a few lessons per attempt) tries same-backend exemplars first when drafting;
    # the service keeps the memory's rank order (values carry how lessons fared here).
    backend_first: bool = True

    def __post_init__(self) -> None:
        self.now = Hints(self.lessons)
        self.remembered = Hints(self.seen_lessons + self.lessons)
        self.observed = {identity(config_key(self.space, o.config)) for o in self.observations}
        self.valid_keys = (
            frozenset(identity(key) for key in self.valid) if self.valid is not None else None
        )
        self.timed_out = False
        feasible = [o for o in self.observations if o.feasible and o.latency_ms is not None]
        self.feasible = sorted(feasible, key=lambda o: o.latency_ms or 0.0)
        self.best = self.feasible[0] if self.feasible else None
        self._random_order: list[Key] | None = None

    def taken(self, key: Key) -> bool:
        same_key = identity(key)
        return same_key in self.observed or same_key in self.offered

    def fresh(self, config: Mapping[str, Any] | None) -> bool:
        """In the space (and the valid list), untried, unoffered, not excluded by a failure."""
        if config is None:
            return False
        key = config_key(self.space, config)
        if self.taken(key) or self.remembered.excluded(config):
            return False
        if self.valid_keys is not None:
            return identity(key) in self.valid_keys
        return all(
            name in config and position(config[name], allowed) is not None
            for name, allowed in self.space.items()
        )

    def offer(self, suggestion: Suggestion) -> Suggestion:
        self.offered.add(identity(config_key(self.space, suggestion.config)))
        return suggestion

    def random_order(self, rng: random.Random) -> list[Key]:
        """The valid list in one random order, drawn once per round."""
        if self._random_order is None:
            assert self.valid is not None
            self._random_order = list(self.valid)
            rng.shuffle(self._random_order)
        return self._random_order


def _poor_sources(state: SuggestState) -> set[str]:
    """Source chips whose exemplars, tried here, all reached under 80% of the best so far."""
    if state.best is None or state.best.latency_ms is None:
        return set()
    best_ms = state.best.latency_ms
    chips_of = {lesson.id: lesson.chips for lesson in state.seen_lessons + state.lessons}
    quality: dict[str, float] = {}
    for attempt in state.observations:
        reached = best_ms / attempt.latency_ms if attempt.feasible and attempt.latency_ms else 0.0
        for lesson_id in attempt.used:
            for chip in chips_of.get(lesson_id, ()):
                quality[chip] = max(quality.get(chip, 0.0), reached)
    return {chip for chip, q in quality.items() if q < 0.8}


def _badness(observations: Iterable[Observation], best_ms: float) -> dict[tuple[str, Any], float]:
    """How badly each (parameter, value) did in the run's own attempts, 0 (fine) to 1."""
    totals: dict[tuple[str, Any], list[float]] = {}
    for attempt in observations:
        if attempt.feasible and attempt.latency_ms:
            bad = min(1.0, max(0.0, math.log(attempt.latency_ms / best_ms) / math.log(2.0)))
        else:
            bad = 1.0
        for item in attempt.config.items():
            totals.setdefault(item, []).append(bad)
    return {item: sum(v) / len(v) for item, v in totals.items()}


def memory_step(state: SuggestState) -> Suggestion | None:
    """The next configuration a retrieved lesson points to, or None when they run out."""
    base = dict(state.best.config) if state.best else None
    exemplars = state.now.exemplars
    if state.stage == "draft" and state.backend_first:
        # Feasibility first: configurations recorded on this backend before transferred ones
        # (the service's rank order kept within each group).
        exemplars = sorted(exemplars, key=lambda pair: pair[0].transferred)
    if base is not None:
        # Once something works: only lessons ranked above the pool's average (z-scores), and
        # none from a chip whose configurations already ran poorly here.
        poor = _poor_sources(state)
        exemplars = [
            pair for pair in exemplars if pair[0].score > 0 and not set(pair[0].chips) & poor
        ]
    for lesson, hint_config in exemplars:
        config = project(hint_config, state.space, base)
        if state.fresh(config):
            assert config is not None
            return Suggestion(
                config, (lesson.id,), "exemplar", f"exemplar:{lesson.id}", lesson.text[:120]
            )
    if base is not None:
        for lesson, param, value, _ in sorted(state.now.prefer, key=lambda p: -p[0].score):
            snapped = snap(value, state.space[param]) if param in state.space else None
            if lesson.score > 0 and snapped is not None:
                config = {**base, param: snapped}
                if state.fresh(config):
                    return Suggestion(
                        config,
                        (lesson.id,),
                        "preference",
                        f"prefer:{lesson.id}",
                        f"{param}={value}",
                    )
    return None


def local_move(state: SuggestState, rng: random.Random) -> dict[str, Any] | None:
    """The best one-parameter move around the best configurations so far (see the module)."""
    hints = state.remembered
    support: dict[tuple[str, Any], int] = {}
    for _, hint_config in hints.exemplars:
        for name, value in hint_config.items():
            support[(name, value)] = support.get((name, value), 0) + 1
    badness = (
        _badness(state.observations, state.feasible[0].latency_ms or 1.0) if state.feasible else {}
    )
    for centre in state.feasible[:5]:
        moves: list[tuple[float, float, dict[str, Any]]] = []
        for name, allowed in state.space.items():
            i = position(centre.config.get(name), allowed)
            if len(allowed) < 2 or i is None:
                continue
            # Adjacent values, and values known-good configurations use (path relinking).
            near = [j for j in (i - 1, i + 1) if 0 <= j < len(allowed)]
            for p, v in support:
                at = position(v, allowed) if p == name else None
                if at is not None:
                    near.append(at)
            values = [allowed[j] for j in dict.fromkeys(near) if j != i]
            # A set, as before, unless it would merge values Python calls equal (true and 1).
            steps = set(values) if len(set(values)) == len(values) else values
            for value in steps:
                config = {**centre.config, name: value}
                if state.fresh(config):
                    # Hints and known-good values pull; values that went badly push away.
                    score = (
                        hints.preference(config)
                        + 0.5 * support.get((name, value), 0)
                        - 2.0 * badness.get((name, value), 0.0)
                    )
                    moves.append((-score, rng.random(), config))
        if moves:
            return min(moves, key=lambda m: (m[0], m[1]))[2]
    return None


def random_untried(state: SuggestState, rng: random.Random) -> dict[str, Any]:
    """A uniformly random configuration of the space neither observed nor offered (an
    exhaustive listing for tiny spaces). Raises SpaceExhausted."""
    space = state.space
    taken = len(state.observed) + len(state.offered)
    if space_size(space) <= 4 * (taken + 1):
        left = [c for c in itertools.product(*space.values()) if not state.taken(c)]
        if not left:
            raise SpaceExhausted("every configuration of the space has been tried")
        return dict(zip(space, rng.choice(left), strict=True))
    for _ in range(RANDOM_DRAWS):
        config = {name: rng.choice(list(values)) for name, values in space.items()}
        if not state.taken(config_key(space, config)):
            return config
    raise SpaceExhausted(f"no untried configuration in {RANDOM_DRAWS} random draws")


def _random_valid(
    state: SuggestState, rng: random.Random, skip_excluded: bool
) -> dict[str, Any] | None:
    """The next untried configuration of the valid list in the round's random order."""
    for key in state.random_order(rng):
        if state.taken(key):
            continue
        config = dict(zip(state.space, key, strict=True))
        if not (skip_excluded and state.remembered.excluded(config)):
            return config
    return None


def search_step(state: SuggestState, rng: random.Random) -> Suggestion:
    """The search's next configuration: a local move, a remembered exemplar, a random one.
    Raises SpaceExhausted when nothing is left."""
    neighbour = local_move(state, rng)
    if neighbour is not None:
        return Suggestion(
            neighbour, (), "search", "local", "one-parameter move around the best so far"
        )
    base = dict(state.best.config) if state.best else None
    for lesson, hint_config in state.remembered.exemplars:
        config = project(hint_config, state.space, base)
        if state.fresh(config):
            assert config is not None
            return Suggestion(config, (), "exemplar", f"remembered:{lesson.id}", lesson.text[:120])
    if state.valid is not None:
        config = _random_valid(state, rng, True)
        if config is not None:
            return Suggestion(config, (), "search", "random", "no hint or neighbour left")
        config = _random_valid(state, rng, False)
        if config is None:
            raise SpaceExhausted("every valid configuration has been tried")
        return Suggestion(config, (), "search", "random", "only excluded ones left")
    for _ in range(1000):
        config = random_untried(state, rng)
        if not state.remembered.excluded(config):
            return Suggestion(config, (), "search", "random", "no hint or neighbour left")
    return Suggestion(random_untried(state, rng), (), "search", "random", "only excluded ones left")


def next_suggestion(state: SuggestState, rng: random.Random) -> Suggestion:
    """One configuration: the memory's next, else the search's (the agent's proposer)."""
    return memory_step(state) or search_step(state, rng)


# Feasible outcomes of the run before a model may lead: the memory's exemplars open the run.
MODEL_OPENING = 2


class ModelProposer(Protocol):
    """The seam for model-based suggestions (source "model")."""

    def __call__(self, state: SuggestState, n: int) -> Sequence[Suggestion]:
        """Up to n configurations in the model's own order (`suggest` keeps the fresh ones)."""

    def leads(self, state: SuggestState, memory: Suggestion | None) -> bool:
        """Whether the model's next configuration goes before the memory's next one."""


def suggest(
    state: SuggestState,
    k: int,
    seed: int,
    model: ModelProposer | None = None,
    search: Callable[[SuggestState, random.Random], Suggestion] = search_step,
    deadline: float | None = None,
) -> list[Suggestion]:
    """Up to k distinct fresh configurations: the memory's in its order, then the model's
    (when given), then the search's; the model's first when it leads (it predicts its own
    next configuration faster than the memory's, once the run has its opening). Fewer than k
    only when the space runs out, or at `deadline` (a `time.monotonic()` instant; then
    `state.timed_out` is set)."""
    rng = random.Random(seed)
    out: list[Suggestion] = []

    def late() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            state.timed_out = True
        return state.timed_out

    def from_model() -> None:
        assert model is not None
        for suggestion in model(state, k - len(out)):
            if len(out) < k and state.fresh(suggestion.config):
                out.append(state.offer(suggestion))

    led = model is not None and model.leads(state, memory_step(state))
    if led:
        from_model()
    while len(out) < k and not late():
        step = memory_step(state)
        if step is None:
            break
        out.append(state.offer(step))
    if model is not None and not led and len(out) < k and not late():
        from_model()
    while len(out) < k and not late():
        try:
            out.append(state.offer(search(state, rng)))
        except SpaceExhausted:
            break
    return out
