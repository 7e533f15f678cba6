"""The service's wider search for `POST /v1/suggest`, once the memory's configurations run out.

The agent's one-parameter moves (`search.suggest.local_move`) stall in restricted spaces:
when the caller's valid list excludes most single-parameter changes of the best configuration,
the few left are soon spent and the best stops improving. With a valid list, this search moves
within it, to configurations up to two parameters away from the best ones so far (nearer ones,
and those that remembered hints favour, first); and once the best has not improved for a while
it spends every other step on an untried configuration at random, to leave the basin.
"""

from __future__ import annotations

import random
from typing import Any

from tunemem.search.suggest import (
    Key,
    Suggestion,
    SuggestState,
    _badness,
    config_key,
    identity,
    same,
    search_step,
)

# Steps without improvement after which half the steps explore at random.
STALL = 8
# Extra cost of a second changed parameter, in units of the hint score.
SECOND_PARAMETER = 0.75


def _since_best(state: SuggestState) -> int:
    """Observations made after the best one (all of them when nothing is feasible)."""
    if state.best is None:
        return len(state.observations)
    position = max(i for i, o in enumerate(state.observations) if o is state.best)
    return len(state.observations) - 1 - position


def _near(state: SuggestState, centre: Key) -> list[tuple[int, Key]]:
    """Valid configurations one or two parameters away from `centre`, with the distance."""
    cache: dict[Key, list[tuple[int, Key]]] = state.__dict__.setdefault("_near", {})
    at = identity(centre)
    if at not in cache:
        assert state.valid is not None
        found = []
        for key in state.valid:
            distance = sum(not same(a, b) for a, b in zip(key, centre, strict=True))
            if 0 < distance <= 2:
                found.append((distance, key))
        cache[at] = found
    return cache[at]


def _wide_move(state: SuggestState, rng: random.Random) -> dict[str, Any] | None:
    hints = state.remembered
    support: dict[tuple[str, Any], int] = {}
    for _, hint_config in hints.exemplars:
        for item in hint_config.items():
            support[item] = support.get(item, 0) + 1
    best_ms = state.feasible[0].latency_ms or 1.0 if state.feasible else 1.0
    badness = _badness(state.observations, best_ms)
    names = list(state.space)
    for centre in state.feasible[:5]:
        moves: list[tuple[float, float, dict[str, Any]]] = []
        for distance, key in _near(state, config_key(state.space, centre.config)):
            if state.taken(key):
                continue
            config = dict(zip(names, key, strict=True))
            if hints.excluded(config):
                continue
            changed = [(n, config[n]) for n in names if not same(config[n], centre.config.get(n))]
            score = (
                hints.preference(config)
                + sum(0.5 * support.get(item, 0) - 2.0 * badness.get(item, 0.0) for item in changed)
                - SECOND_PARAMETER * (distance - 1)
            )
            moves.append((-score, rng.random(), config))
        if moves:
            return min(moves, key=lambda m: (m[0], m[1]))[2]
    return None


def wide_search_step(state: SuggestState, rng: random.Random) -> Suggestion:
    """The next configuration of the wider search (see the module); raises SpaceExhausted."""
    if state.valid is None:
        return search_step(state, rng)
    if _since_best(state) + len(state.offered) >= STALL and rng.random() < 0.5:
        for key in state.random_order(rng):
            config = dict(zip(state.space, key, strict=True))
            if not state.taken(key) and not state.remembered.excluded(config):
                return Suggestion(config, (), "search", "explore", "the best has stalled")
    move = _wide_move(state, rng)
    if move is not None:
        return Suggestion(move, (), "search", "local", "a move within the valid list")
    return search_step(state, rng)
