"""Suggest, a part of the service: the configurations of a caller's parameter space that the
memory points to for a task on a chip, untried by the run so far.

One retrieval (recorded like any other, so outcomes reported against its id credit the lessons
each suggestion rests on) supplies the lessons; `search.suggest` turns them into
configurations of the space and fills up with its search. A performance model plugs in through
`model`: given the request, the resolved chip and the tenant, it returns a
`search.suggest.ModelProposer` (or None when it has nothing for the task); its suggestions
(source "model") come after the memory's and before the search's.

Every input it accepts is answered within the deadline (`suggest_deadline_s`, the search stops
there and says so), and a stored hint it cannot use is left out and named in the warnings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.learning.loop import LearningLoop
from tunemem.memory_service.core.schemas.learning import (
    RetrievedLesson,
    RetrieveRequest,
    RetrieveResponse,
)
from tunemem.memory_service.core.schemas.suggest import (
    ObservationIn,
    SuggestedLesson,
    SuggestionPublic,
    SuggestRequest,
    SuggestResponse,
)
from tunemem.retrieval.timings import summarise
from tunemem.search.steps import wide_search_step
from tunemem.search.suggest import (
    HintedLesson,
    ModelProposer,
    Observation,
    Suggestion,
    SuggestState,
    config_key,
    identity,
    project,
    suggest,
)

# Lessons retrieved per suggest call: enough exemplars for k configurations, at least ten.
MIN_LESSONS = 10

ModelFactory = Callable[[SuggestRequest, str | None, str | None], ModelProposer | None]


def query_text(request: SuggestRequest, stage: str) -> str:
    """The retrieval's free text, worded exactly as the agent words its own retrieval
    (`agent_client.graph.query_text`), so that a run through suggest opens with the exemplars
    the agent's own ranking puts first (the text moves the similarity, hence the order)."""
    goal = "a first configuration that works" if stage == "draft" else "a faster configuration"
    what = request.task.op or request.task.kernel or "a"
    chip, backend = request.context.chip, request.context.backend
    where = f" on {chip} ({backend})" if chip and backend else f" on {chip}" if chip else ""
    return f"Tune the {what} kernel{where}: {goal}. Parameters: {', '.join(request.space.params)}."


def hinted(lesson: RetrievedLesson) -> HintedLesson:
    return HintedLesson(
        id=lesson.id,
        hint=lesson.hint,
        chips=tuple(lesson.applicability.chips),
        score=lesson.score,
        transferred=lesson.transferred,
        text=lesson.text,
        avoid_applies=lesson.warning or lesson.kind != "failure",
    )


def relative_error(observation: ObservationIn) -> float | None:
    """The relative error of an observation's latency, where its spread was measured."""
    if observation.latency_spread_ms is None or observation.latency_ms is None:
        return None
    summary = summarise(
        None, observation.latency_ms, observation.latency_spread_ms, observation.repetitions
    )
    return summary.relative_error if summary is not None else None


def _credited_observations(
    request: SuggestRequest, space: dict[str, tuple[Any, ...]], lessons: list[HintedLesson]
) -> tuple[Observation, ...]:
    """The observations, each with the retrieved exemplars whose configuration it is (a run's
    configurations that came from a source chip's lessons tell how that chip transfers)."""
    feasible = [o for o in request.observations if o.feasible and o.latency_ms is not None]
    best = min(feasible, key=lambda o: o.latency_ms or 0.0).config if feasible else None
    owners: dict[tuple[Any, ...], list[str]] = {}
    for lesson in lessons:
        config = (lesson.hint or {}).get("config")
        if isinstance(config, dict):
            for base in (None, best):
                projected = project(config, space, base)
                if projected is not None:
                    key = identity(config_key(space, projected))
                    owners.setdefault(key, []).append(lesson.id)
    return tuple(
        Observation(
            o.config,
            o.feasible,
            o.latency_ms,
            tuple(dict.fromkeys(owners.get(identity(config_key(space, o.config)), []))),
            relative_error(o),
        )
        for o in request.observations
    )


class Suggestions:
    """Suggest configurations for a task from the memory's lessons, then search."""

    def __init__(
        self,
        learning: LearningLoop,
        model: ModelFactory | None = None,
        deadline_s: float = 10.0,
    ):
        self.learning = learning
        self.model = model
        self.deadline_s = deadline_s

    def suggest(self, request: SuggestRequest, *, tenant: str | None = None) -> SuggestResponse:
        deadline = time.monotonic() + self.deadline_s
        for i, observation in enumerate(request.observations):
            problem = request.space.problem(observation.config)
            if problem:
                raise InvalidInput(
                    f"observations[{i}]: {problem}", code="observation_outside_space"
                )
        stage = request.stage or (
            "refine" if any(o.feasible for o in request.observations) else "draft"
        )
        n_lessons = min(100, max(MIN_LESSONS, 2 * request.k))
        retrieval = self.learning.retrieve(
            RetrieveRequest(
                query=query_text(request, stage),
                task=request.task,
                context=request.context,
                stage=stage,
                k=n_lessons,
                options=request.options,
            ),
            tenant=tenant,
        )
        space = {name: tuple(values) for name, values in request.space.params.items()}
        lessons = [hinted(lesson) for lesson in retrieval.lessons]
        valid = request.space.valid
        state = SuggestState(
            space=space,
            stage=stage,
            lessons=tuple(lessons),
            observations=_credited_observations(request, space, lessons),
            valid=[config_key(space, c) for c in valid] if valid is not None else None,
            backend_first=False,
        )
        seed = request.seed if request.seed is not None else len(request.observations)
        model = self.model(request, retrieval.chip, tenant) if self.model else None
        chosen = suggest(state, request.k, seed, model, wide_search_step, deadline)
        return SuggestResponse(
            retrieval_id=retrieval.retrieval_id,
            stage=stage,
            chip=retrieval.chip,
            suggestions=[self._public(s, retrieval) for s in chosen],
            warnings=[*retrieval.warnings, *self._warnings(request, state, len(chosen))],
            settings={**retrieval.settings, "lessons": n_lessons, "seed": seed},
        )

    @staticmethod
    def _public(suggestion: Suggestion, retrieval: RetrieveResponse) -> SuggestionPublic:
        by_id = {lesson.id: lesson for lesson in retrieval.lessons}
        return SuggestionPublic(
            config=suggestion.config,
            source=suggestion.source,
            lessons=[
                SuggestedLesson(
                    id=lesson_id,
                    value=by_id[lesson_id].breakdown.value,
                    value_scope=by_id[lesson_id].breakdown.value_scope,
                    n=by_id[lesson_id].breakdown.n,
                    source_run=by_id[lesson_id].breakdown.source_run,
                )
                for lesson_id in suggestion.used
                if lesson_id in by_id
            ],
            rationale=f"{suggestion.origin}: {suggestion.rationale}".rstrip(": "),
            prediction=dict(suggestion.prediction) if suggestion.prediction else None,
        )

    @staticmethod
    def _warnings(request: SuggestRequest, state: SuggestState, n: int) -> list[str]:
        out = []
        if not state.now.exemplars and not state.now.prefer:
            out.append(
                "the memory holds no configuration for this task: the suggestions come from "
                "search alone"
            )
        if state.timed_out:
            out.append(
                f"the search stopped at its deadline with {n} of {request.k} configuration(s)"
            )
        elif n < request.k:
            out.append(f"only {n} untried configuration(s) left in the space")
        for lesson_id, why in dict.fromkeys(state.now.skipped):
            out.append(f"lesson {lesson_id}: {why}; that part of its hint is left out")
        return out
