"""Which configurations the drop-in times for a new key, and what it records of the choice.

`choose(tuning, ...)` is `MemoryTuning.choose`: the budget check, the opening question to the
memory (nothing remembered or no answer: every configuration, as Triton would), then the
search in rounds (`rounds.RoundSearch`) with Triton's benchmarking, and the decision and
pending report it hands back (`KeyTuning.record`). `tuning` is anything with `KeyTuning`'s
members: `autotune.MemoryTuning` is one, and imports this module, not the other way round.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from tunemem.agent_client.tuners.triton.records import (
    Pending,
    config_params,
    params_key,
    scalar,
    timing_ms,
)
from tunemem.agent_client.tuners.triton.rounds import Pick, RoundPolicy, RoundSearch

# Suggestion sources that rest on what the memory holds (the rest is the service's search).
INFORMED = frozenset({"exemplar", "preference", "model"})
ParamsKey = tuple[tuple[str, Any], ...]


class KeyTuning(Protocol):
    """What `choose` needs of the drop-in for one new key (`autotune.MemoryTuning`)."""

    @property
    def memory_url(self) -> str: ...

    @property
    def policy(self) -> RoundPolicy: ...

    @property
    def seed(self) -> int: ...

    def task_of(self, named: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        """The memory's task for the key's arguments."""
        ...

    def budget(self, given: int) -> int:
        """How many of `given` configurations to time."""
        ...

    def suggest(
        self,
        task: dict[str, Any],
        valid: list[dict[str, Any]],
        k: int,
        observations: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        """The memory's suggest answer for the task over `valid` (None: no answer)."""
        ...

    def warn(self, message: str) -> None:
        """The drop-in's one warning line."""
        ...

    def record(self, pending: Pending, decision: dict[str, Any]) -> None:
        """Keep what will be timed for the key (the report to send) and why."""
        ...


def choose(
    tuning: KeyTuning,
    configs: list[Any],
    named: dict[str, Any],
    keys: list[str],
    bench: Callable[[list[Any]], dict[Any, Any]] | None,
) -> list[Any]:
    """See `MemoryTuning.choose`."""
    task = tuning.task_of(named, keys)
    key = {k: scalar(named[k]) for k in keys if k in named}
    by_key = {params_key(config_params(c)): c for c in configs}
    ceiling = tuning.budget(len(by_key))
    pending = Pending(task=task, key=key, given=len(configs), timed=[], origins={})
    if ceiling >= len(by_key):
        return _everything(tuning, pending, configs, "all given configurations fit the budget")
    params = {k: config_params(c) for k, c in by_key.items()}
    opening = ask(tuning, task, params, [], tuning.policy.opening_size(ceiling))
    if opening is None:
        return _everything(
            tuning, pending, configs, "the memory could not help: every configuration"
        )
    # The memory is untrusted: only configurations of the given list count as an answer.
    opening = [p for p in opening if p.config in by_key]
    if not any(p.origin.removeprefix("memory:") in INFORMED for p in opening):
        tuning.warn(f"the memory at {tuning.memory_url} has nothing for {task['kernel']} here")
        return _everything(tuning, pending, configs, "the memory had nothing: every configuration")

    bench_s = 0.0

    def timed(ids: list[Any]) -> dict[Any, float]:
        nonlocal bench_s
        if bench is None:
            return {}
        started = time.perf_counter()
        measured = bench([by_key[i] for i in ids])
        bench_s += time.perf_counter() - started
        return {i: timing_ms(measured[by_key[i]]) for i in ids if by_key[i] in measured}

    search = RoundSearch(
        list(by_key),
        ceiling,
        lambda observed, k: ask(tuning, task, params, observed, k),
        timed,
        tuning.policy if bench is not None else RoundPolicy(opening=1.0),
        seed=f"{tuning.seed}:{sorted(key.items())}",
        features=features(params),
    )
    result = search.run(opening)
    found: Any
    for found, pick in result.picks.items():
        pending.origins[found] = pick.origin
        if pick.origin.startswith("memory:"):
            pending.suggestions[found] = list(pick.lessons)
            if pick.retrieval_id:
                pending.retrievals[found] = pick.retrieval_id
    pending.retrieval_id = next(iter(pending.retrievals.values()), None)
    pending.search = result
    chosen = [by_key[found] for found in pending.origins]
    if not chosen:  # nothing usable came back: Triton's own behaviour
        return _everything(tuning, pending, configs, "the memory had nothing: every configuration")
    decided(tuning, pending, chosen, "memory", bench_s)
    return chosen


def features(params: dict[ParamsKey, dict[str, Any]]) -> dict[ParamsKey, tuple[float, ...]]:
    """Each configuration as a point in [0, 1] per parameter: its value's rank among the given
    values of that parameter (numbers in order, so 64 lies between 32 and 128)."""
    names = sorted({name for config in params.values() for name in config})
    ranks: dict[str, dict[str, float]] = {}
    for name in names:
        values = {repr(c.get(name)): c.get(name) for c in params.values()}
        order = sorted(values, key=lambda v: _sortable(values[v]))
        span = max(1, len(order) - 1)
        ranks[name] = {v: i / span for i, v in enumerate(order)}
    return {
        k: tuple(ranks[name][repr(config.get(name))] for name in names)
        for k, config in params.items()
    }


def _sortable(value: Any) -> tuple[int, float, str]:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return (0, float(value), "") if number else (1, 0.0, repr(value))


def _everything(tuning: KeyTuning, pending: Pending, configs: list[Any], how: str) -> list[Any]:
    pending.origins = {params_key(config_params(c)): "given" for c in configs}
    decided(tuning, pending, configs, how)
    return configs


def ask(
    tuning: KeyTuning,
    task: dict[str, Any],
    params: dict[ParamsKey, dict[str, Any]],
    observed: list[tuple[Any, float]],
    k: int,
) -> list[Pick] | None:
    """The memory's next k configurations for this key, given its timings so far (None: the
    memory could not answer)."""
    observations = [
        {"config": params[i], "latency_ms": ms, "feasible": True}
        if math.isfinite(ms)
        else {"config": params[i], "feasible": False}
        for i, ms in observed
    ]
    answer = tuning.suggest(task, list(params.values()), k, observations)
    if answer is None:
        return None
    found = answer.get("retrieval_id")
    retrieval_id = found if isinstance(found, str) and found else None
    picks = []
    suggestions = answer.get("suggestions")
    for s in suggestions if isinstance(suggestions, list) else []:
        try:  # a suggestion that is no configuration of the given list is never timed
            config = params_key(s["config"])
            lessons = tuple(str(lesson["id"]) for lesson in s.get("lessons") or [])
        except (TypeError, KeyError, AttributeError):
            continue
        source = s.get("source", "")
        picks.append(
            Pick(
                config, f"memory:{source}", lessons, retrieval_id, _confidence(s.get("prediction"))
            )
        )
    return picks


def _confidence(prediction: Any) -> float | None:
    value = prediction.get("confidence") if isinstance(prediction, dict) else None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def decided(
    tuning: KeyTuning,
    pending: Pending,
    configs: list[Any],
    how: str,
    bench_s: float | None = None,
) -> None:
    """Record what will be timed for the key, and why (`tuning.record`); `bench_s`: the
    seconds Triton's benchmarking took in the rounds, when they ran."""
    pending.timed = [config_params(c) for c in configs]
    search = pending.search
    decision: dict[str, Any] = {
        "key": pending.key,
        "given": pending.given,
        "ceiling": tuning.budget(pending.given),
        "timed": len(configs),
        "how": how,
        "rounds": [len(r.timed) for r in search.rounds] if search else [],
        "confidence": [r.confidence for r in search.rounds] if search else [],
        "stopped": search.stopped if search else how,
        "retrieval_id": pending.retrieval_id,
        "origins": [pending.origins.get(params_key(p), "given") for p in pending.timed],
        "configs": pending.timed,
    }
    if bench_s is not None:
        decision["bench_s"] = bench_s
    tuning.record(pending, decision)
