"""Model-based suggestions: the family's performance model behind `POST /v1/suggest`.

`ModelSuggester` is the factory `Suggestions` calls per request: it finds the cached model of
the request's family (op and parameter names), with no wait for a training in progress, and
returns a `ModelSearch` for the round, or None when the store holds no space of the family.
`ModelSearch` refits the model to the run's observations (`search.model_search`), proposes by
expected improvement and says what each suggestion rests on (the `prediction` field). The
confidence it reports in the key (what a client such as the Triton drop-in stops on) is the
posterior's times the reach of the stored keys at the request's key (`search.model.reach`,
also reported): a key beyond where the memory's measurements were seen to carry is one the
memory cannot be sure of, whatever share of the configurations it measured. The posterior's
own batch (`search.model.batch`) keeps its confidence. A configuration that a remembered failure
excludes (a hint's `avoid` pattern that fails more often than not) is closed in the posterior
before the batch is chosen: the performance model does not know failures at a key it has not
seen, and its picks that the suggest then dropped used to leave the round short of the model's
configurations.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from tunemem.memory_service.core.schemas.suggest import SuggestRequest
from tunemem.memory_service.core.suggest.perf_model_cache import (
    BuiltModel,
    PerformanceModels,
    problem_key,
)
from tunemem.platforms.similarity import chip_similarity
from tunemem.search.model.family import ConfigKey
from tunemem.search.model.pooled import KeyContext
from tunemem.search.model.reach import model_reach
from tunemem.search.model_search import (
    POOLED_SHARE_KNOWN_KEY,
    POOLED_SHARE_NEW_KEY,
    ModelSuggestion,
    Posterior,
    fit_posterior,
)
from tunemem.search.suggest import Suggestion, SuggestState, config_key

log = logging.getLogger(__name__)

# A stored space of another problem of the family counts half as much a priori as one of the
# same problem on the same chip.
OTHER_PROBLEM = 0.5


def column_prior(
    built: BuiltModel, chip: str | None, signature: Mapping[str, Any] | None
) -> dict[str, float]:
    """Prior weight of each stored column: the similarity of its chip to the target chip (from
    the platforms' descriptors), halved for another problem size."""
    wanted = problem_key(dict(signature or {}))
    prior = {}
    for label, (source_chip, problem) in built.columns.items():
        similarity = chip_similarity(chip, source_chip) if chip else 1.0
        prior[label] = similarity * (1.0 if problem == wanted else OTHER_PROBLEM)
    return prior


def _rationale(s: ModelSuggestion, n_configs: int) -> str:
    chips = ", ".join(f"{c} {w:.2f}" for c, w in sorted(s.chips.items(), key=lambda x: -x[1]))
    drivers = ", ".join(f"{p}={v} (x{r:.2f})" for p, v, r in s.drivers)
    if s.purpose == "local":
        return (
            f"searching near the run's best: {s.stall} outcomes without improvement, so this "
            f"is the best-predicted untried neighbour of the best configurations (predicted "
            f"{s.fraction:.2f} of the optimum, {s.interval[0]:.2f}-{s.interval[1]:.2f})"
        )
    if s.purpose == "explore":
        return (
            f"exploring: the memory's confidence here is {s.confidence:.2f}, so this is the "
            f"untried configuration farthest from those tried among the promising half "
            f"(predicted {s.fraction:.2f} of the optimum, {s.interval[0]:.2f}-{s.interval[1]:.2f}, "
            f"from {n_configs} stored configurations and {s.n_observations} of this run's outcomes)"
        )
    return (
        f"predicted {s.fraction:.2f} of the optimum ({s.interval[0]:.2f}-{s.interval[1]:.2f}) "
        f"from the stored spaces of {chips} ({n_configs} configurations) and "
        f"{s.n_observations} of this run's outcomes" + (f"; driven by {drivers}" if drivers else "")
    )


class ModelSearch:
    """One suggest round's model: refit once to the round's observations."""

    def __init__(
        self,
        built: BuiltModel,
        prior: Mapping[str, float],
        seed: int,
        target: KeyContext | None = None,
        pooled_share: float = POOLED_SHARE_NEW_KEY,
    ) -> None:
        self.built = built
        self.prior = dict(prior)
        self.seed = seed
        self.target = target
        self.pooled_share = pooled_share
        self._posterior: tuple[int, Posterior] | None = None
        self.failed = False
        self._key_reach: float | None = None

    @property
    def key_reach(self) -> float:
        """How far the stored keys carry to the request's key (`search.model.reach`)."""
        if self._key_reach is None:
            self._key_reach = model_reach(self.built.model, self.target)
        return self._key_reach

    def _key(self, config: Mapping[str, Any]) -> ConfigKey:
        return tuple(config.get(p) for p in self.built.model.params)

    def posterior(self, state: SuggestState) -> Posterior:
        if self._posterior is not None and self._posterior[0] == id(state):
            return self._posterior[1]
        space = list(state.space)
        observations = [
            (
                self._key(o.config),
                o.latency_ms if o.feasible and o.latency_ms is not None else None,
            )
            for o in state.observations
        ]
        noise = {  # the variance of ln latency a measured spread says
            self._key(o.config): o.relative_error**2
            for o in state.observations
            if o.relative_error is not None and o.feasible
        }
        valid = None
        if state.valid is not None:
            valid = [self._key(dict(zip(space, key, strict=True))) for key in state.valid]
        posterior = fit_posterior(
            self.built.model,
            observations,
            self.prior,
            allowed={name: list(values) for name, values in state.space.items()},
            valid=valid,
            seed=self.seed,
            target=self.target,
            pooled_share=self.pooled_share,
            noise=noise,
        )
        if state.remembered.hard_avoid:
            # What a remembered failure excludes is never offered (`suggest` keeps only fresh
            # configurations): the batch is chosen without it rather than cut short after.
            params = self.built.model.params
            posterior.close(
                int(i)
                for i in np.flatnonzero(posterior.open)
                if state.remembered.excluded(dict(zip(params, posterior.keys[int(i)], strict=True)))
            )
        self._posterior = (id(state), posterior)
        return posterior

    def __call__(self, state: SuggestState, n: int) -> list[Suggestion]:
        """Up to n configurations by expected improvement, none observed or offered; none when
        the model fails on this request (the search answers without it)."""
        try:
            return self._suggest(state, n)
        except Exception:  # a model's fault never fails the suggest it only helps
            log.exception("the model of %s failed on a request; answering without it", self._op)
            self.failed = True
            return []

    @property
    def _op(self) -> str:
        return ",".join(self.built.model.params)

    def _suggest(self, state: SuggestState, n: int) -> list[Suggestion]:
        posterior = self.posterior(state)
        params = self.built.model.params
        out: list[Suggestion] = []
        for s in posterior.suggest(n + len(state.offered)):
            config = {name: dict(zip(params, s.key, strict=True))[name] for name in state.space}
            if state.taken(config_key(state.space, config)):
                continue
            out.append(
                Suggestion(
                    config=config,
                    used=(),
                    source="model",
                    origin="model",
                    rationale=_rationale(s, self.built.n_configs),
                    prediction={
                        "predicted_ms": s.predicted_ms,
                        "fraction": s.fraction,
                        "interval": list(s.interval),
                        "expected_improvement": s.expected_improvement,
                        "chips": s.chips,
                        "n_observations": s.n_observations,
                        "configurations": self.built.n_configs,
                        "drivers": [{"param": p, "value": v, "ratio": r} for p, v, r in s.drivers],
                        # Sure of this key only where the run's ranking and the reach hold.
                        "confidence": round(s.confidence * self.key_reach, 3),
                        "key_reach": round(self.key_reach, 3),
                        "purpose": s.purpose,
                        "stall": s.stall,
                    },
                )
            )
            if len(out) == n:
                break
        return out

    def leads(self, state: SuggestState, memory: Suggestion | None) -> bool:
        """Whether the model's pick goes before the memory's next configuration: once the run
        has `MODEL_OPENING` feasible outcomes, when the model predicts its own pick faster (or
        the memory has nothing left)."""
        from tunemem.search.suggest import MODEL_OPENING

        if self.failed or len(state.feasible) < MODEL_OPENING:
            return False
        try:
            return self._leads(state, memory)
        except Exception:  # as in __call__
            log.exception("the model of %s failed on a request; answering without it", self._op)
            self.failed = True
            return False

    def _leads(self, state: SuggestState, memory: Suggestion | None) -> bool:
        posterior = self.posterior(state)
        picks = self(state, 1)
        if not picks:
            return False
        if memory is None:
            return True
        ours = posterior.predict(self._key(picks[0].config))
        theirs = posterior.predict(self._key(memory.config))
        return theirs is None or (ours is not None and ours < theirs)


class ModelSuggester:
    """The factory behind `Suggestions(model=...)`: a `ModelSearch` per request, or None."""

    def __init__(self, models: PerformanceModels, default_tenant: str) -> None:
        self.models = models
        self.default_tenant = default_tenant

    def __call__(
        self, request: SuggestRequest, chip: str | None, tenant: str | None
    ) -> ModelSearch | None:
        if not request.task.op:
            return None
        built = self.models.get(
            tenant or self.default_tenant, request.task.op, list(request.space.params)
        )
        if built is None:
            return None
        seed = request.seed if request.seed is not None else len(request.observations)
        signature = request.task.signature
        target = KeyContext.of(signature, chip)
        wanted = problem_key(dict(signature or {}))
        # A problem some stored column measured (on any chip) leaves the pooled model only
        # the chip's descriptors to add; a new problem is where it carries what the others
        # cannot.
        known = any(p == wanted for _, p in built.columns.values())
        share = POOLED_SHARE_KNOWN_KEY if known else POOLED_SHARE_NEW_KEY
        return ModelSearch(built, column_prior(built, chip, signature), seed, target, share)
