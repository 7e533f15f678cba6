"""The structured proposer: lesson hints turned into configurations, then local search.

Order of preference for the next configuration:
1. the exemplar configurations of the lessons the service returned now, in its rank order
   (credited to that lesson alone, so its value measures how well its configuration works here);
   in the draft stage, where feasibility is the goal, same-backend ones before transferred ones;
   once something works, only lessons the service ranks above its pool's average, and none
   from a source chip whose configurations already ran poorly here;
2. a parameter preference of such a lesson applied to the best configuration so far, in the
   service's rank order (its learned value is part of that order);
3. local search: moves of one parameter around the best configurations so far, to an adjacent
   value or to a value that remembered exemplars use; moves that follow remembered preferences
   and exemplars first, moves to values that went badly in this run's own attempts last;
4. exemplars remembered from earlier retrievals, then a random untried configuration.
Failure hints with a high failure rate exclude matching configurations throughout.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from agent_client.models import RetrievedLesson
from agent_client.proposers.base import (
    Proposal,
    ProposalRequest,
    Proposer,
    config_key,
    random_untried,
)

_HARD_FAILURE_RATE = 0.5


def _snap(value: Any, allowed: tuple[Any, ...]) -> Any | None:
    """The allowed value equal to `value`, or the numerically nearest one, or None."""
    if value in allowed:
        return value
    numeric = [a for a in allowed if isinstance(a, int | float) and not isinstance(a, bool)]
    if isinstance(value, int | float) and numeric:
        return min(numeric, key=lambda a: abs(a - value))
    return None


def project(
    hint_config: Mapping[str, Any],
    space: Mapping[str, tuple[Any, ...]],
    base: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """A lesson's configuration expressed in this task's space (missing values from `base`)."""
    shared = [name for name in space if name in hint_config]
    if not shared:
        return None
    config: dict[str, Any] = {}
    for name, allowed in space.items():
        value = _snap(hint_config[name], allowed) if name in hint_config else None
        if value is None:
            value = base[name] if base and name in base else allowed[0]
        config[name] = value
    return config


def _matches(config: Mapping[str, Any], pattern: Mapping[str, Any]) -> bool:
    return bool(pattern) and all(config.get(k) == v for k, v in pattern.items())


class _Hints:
    """Exemplars, preferences and exclusions gathered from a set of lessons."""

    def __init__(self, lessons: tuple[RetrievedLesson, ...]) -> None:
        self.exemplars: list[tuple[RetrievedLesson, dict[str, Any]]] = []
        self.prefer: list[tuple[RetrievedLesson, str, Any, float]] = []
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
                # Every failure lesson comes back as a warning; only a pattern that fails more
                # often than not is worth excluding outright, the rest only lowers preference.
                rate = float(hint.get("failure_rate") or 0.0)
                if rate >= _HARD_FAILURE_RATE:
                    self.hard_avoid.append(dict(hint["avoid"]))
                else:
                    self.soft_avoid.extend(hint["avoid"].items())

    def excluded(self, config: Mapping[str, Any]) -> bool:
        return any(_matches(config, pattern) for pattern in self.hard_avoid)

    def preference(self, config: Mapping[str, Any]) -> float:
        score = sum(1.0 for _, p, v, _ in self.prefer if config.get(p) == v)
        return score - sum(1.0 for p, v in self.soft_avoid if config.get(p) == v)


def _poor_sources(request: ProposalRequest, best_ms: float | None) -> set[str]:
    """Source chips whose exemplars, tried here, all reached under 80% of the best so far."""
    if best_ms is None:
        return set()
    chips_of = {
        lesson.id: tuple(lesson.applicability.get("chips") or ())
        for lesson in request.seen_lessons + request.lessons
    }
    quality: dict[str, float] = {}
    for attempt in request.history:
        reached = best_ms / attempt.latency_ms if attempt.feasible and attempt.latency_ms else 0.0
        for lesson_id in attempt.used:
            for chip in chips_of.get(lesson_id, ()):
                quality[chip] = max(quality.get(chip, 0.0), reached)
    return {chip for chip, q in quality.items() if q < 0.8}


def _badness(request: ProposalRequest, best_ms: float) -> dict[tuple[str, Any], float]:
    """How badly each (parameter, value) did in the proposer's own attempts, 0 (fine) to 1."""
    totals: dict[tuple[str, Any], list[float]] = {}
    for attempt in request.history:
        if attempt.feasible and attempt.latency_ms:
            bad = min(1.0, max(0.0, math.log(attempt.latency_ms / best_ms) / math.log(2.0)))
        else:
            bad = 1.0
        for item in attempt.config.items():
            totals.setdefault(item, []).append(bad)
    return {item: sum(v) / len(v) for item, v in totals.items()}


class StructuredProposer(Proposer):
    """Turns lesson hints into configurations; explores around the best when they run out."""

    name = "structured"

    def propose(self, request: ProposalRequest) -> Proposal:
        space = request.space
        tried = request.tried()
        best = request.best()
        base = best.config if best else None
        now = _Hints(request.lessons)
        remembered = _Hints(request.seen_lessons + request.lessons)

        def fresh(config: dict[str, Any] | None) -> bool:
            return (
                config is not None
                and config_key(space, config) not in tried
                and not remembered.excluded(config)
            )

        exemplars = now.exemplars
        if request.stage == "draft":
            # Feasibility first: configurations recorded on this backend before transferred ones
            # (the service's rank order kept within each group).
            exemplars = sorted(exemplars, key=lambda pair: pair[0].transferred)
        if base is not None:
            # Once something works, a lesson is worth an attempt only when the service ranks it
            # above the pool's average (scores are z-scored within the pool); below that, local
            # search around the best is the better bet.
            exemplars = [pair for pair in exemplars if pair[0].score > 0]
            # ... and not from a chip whose configurations already ran poorly here.
            poor = _poor_sources(request, best.latency_ms if best else None)
            exemplars = [
                pair
                for pair in exemplars
                if not set(pair[0].applicability.get("chips") or ()) & poor
            ]
        for lesson, hint_config in exemplars:
            config = project(hint_config, space, base)
            if fresh(config):
                assert config is not None
                return Proposal(config, (lesson.id,), f"exemplar:{lesson.id}", lesson.text[:120])
        if base is not None:
            for lesson, param, value, _ in sorted(now.prefer, key=lambda p: -p[0].score):
                if lesson.score > 0 and param in space and _snap(value, space[param]) is not None:
                    config = {**base, param: _snap(value, space[param])}
                    if fresh(config):
                        return Proposal(
                            config, (lesson.id,), f"prefer:{lesson.id}", f"{param}={value}"
                        )
        rng = request.rng()
        neighbour = self._local_move(request, remembered, rng, fresh)
        if neighbour is not None:
            return Proposal(neighbour, (), "local", "one-parameter move around the best so far")
        for lesson, hint_config in remembered.exemplars:
            config = project(hint_config, space, base)
            if fresh(config):
                assert config is not None
                return Proposal(config, (), f"remembered:{lesson.id}", lesson.text[:120])
        for _ in range(1000):
            config = random_untried(request, rng)
            if not remembered.excluded(config):
                return Proposal(config, (), "random", "no hint or neighbour left")
        return Proposal(random_untried(request, rng), (), "random", "only excluded ones left")

    @staticmethod
    def _local_move(
        request: ProposalRequest,
        hints: _Hints,
        rng: random.Random,
        fresh: Any,
    ) -> dict[str, Any] | None:
        feasible = sorted(
            (a for a in request.history if a.feasible and a.latency_ms is not None),
            key=lambda a: a.latency_ms or 0.0,
        )
        support: dict[tuple[str, Any], int] = {}
        for _, hint_config in hints.exemplars:
            for name, value in hint_config.items():
                support[(name, value)] = support.get((name, value), 0) + 1
        badness = _badness(request, feasible[0].latency_ms or 1.0) if feasible else {}
        for centre in feasible[:5]:
            moves: list[tuple[float, float, dict[str, Any]]] = []
            for name, allowed in request.space.items():
                if len(allowed) < 2 or centre.config.get(name) not in allowed:
                    continue
                i = allowed.index(centre.config[name])
                # Adjacent values, and values that known-good configurations use (a step of
                # path relinking towards them).
                steps = {allowed[j] for j in (i - 1, i + 1) if 0 <= j < len(allowed)}
                steps |= {v for (p, v) in support if p == name and v in allowed}
                steps.discard(centre.config[name])
                for value in steps:
                    config = {**centre.config, name: value}
                    if fresh(config):
                        # Hints and known-good values pull; values that went badly in this
                        # run's own attempts push away.
                        score = (
                            hints.preference(config)
                            + 0.5 * support.get((name, value), 0)
                            - 2.0 * badness.get((name, value), 0.0)
                        )
                        moves.append((-score, rng.random(), config))
            if moves:
                return min(moves, key=lambda m: (m[0], m[1]))[2]
        return None
