"""A Kernel Tuner strategy that starts from the tunemem memory:

    from kernel_tuner import tune_kernel
    from tunemem.tuners import MemoryStrategy
    tune_kernel(..., strategy=MemoryStrategy(url=URL), strategy_options={"max_fevals": 20})

Kernel Tuner calls `tune(searchspace, runner, tuning_options)` (1.4 and later; 1.3 has no
`tune_cache`, and its simulation runner names no device: see `device_name`). Each round
asks `POST /v1/suggest` for k configurations of this kernel, problem size and device, sending
the run's own observations so far, evaluates them through Kernel Tuner's own cost function (so
`max_fevals`, the time limit, the cache and simulation mode behave as with any strategy),
reports every evaluated configuration as an outcome against its suggestion, and at the end
uploads the run as a trajectory, so the next user on the next GPU starts from it. The memory
unreachable, refusing, or holding nothing for this kernel: one warning line, and the run goes on
with the search `search.suggest` does in the service (local moves, then untried ones at
random). The user's tuning never fails because of the memory: the run keeps one
`memory_policy.MemoryGuard`, the tuners' one policy shared with the Triton drop-in and `tunemem
tune moe` (every request under one deadline, no retry, a capped answer; a failure is one
warning and the memory left alone for `RETRY_AFTER_S`; a 429 is busy, not away: no warning,
the round is the run's own and the memory is asked again after its Retry-After; reports and
the upload in the background, flushed at the end within two deadlines). A suggestion is
evaluated only when it is a configuration of the user's own space and restrictions not tried
yet; `IDLE_ROUNDS` rounds in a row with none such are a failure of the memory.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.models import Outcome, timed_attempt
from tunemem.agent_client.tuners.kernel_tuner_runner import (
    device_name,
    kernel_backend,
    reported_device_name,
    warn_stderr,
)
from tunemem.agent_client.tuners.memory_answers import usable_suggestions
from tunemem.agent_client.tuners.memory_link import MemoryLink
from tunemem.agent_client.tuners.memory_policy import MemoryGuard
from tunemem.ingest.chip_context import UNKNOWN_BACKEND, chip_context
from tunemem.ingest.provenance import Provenance
from tunemem.ingest.readers.kerneltuner import op_name
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.search.steps import wide_search_step
from tunemem.search.suggest import (
    Observation,
    SpaceExhausted,
    SuggestState,
    config_key,
    identity,
)

# Rounds in a row whose suggestions are all unusable (outside the space or its restrictions,
# tried, malformed) before the memory counts as failed (left alone, `MemoryGuard.fail`).
IDLE_ROUNDS = 2
# The most valid configurations the service takes in one request (its MAX_VALID): a larger
# space is sent as its parameters alone, and suggestions outside the restrictions are skipped.
VALID_SENT_MAX = 50_000


class MemoryStrategy:
    """A Kernel Tuner strategy: the memory's configurations first, then its own search.

    Args:
        url: the tunemem server; None runs the search alone (no memory).
        api_key: a key with the agent role, when the server checks keys.
        k: configurations asked for per round (more: fewer requests; fewer: each round uses
            more of the run's own observations).
        chip: the device as the memory should know it (default: Kernel Tuner's device name).
        op: the operator family (default: the kernel name without "_kernel", as ingest names
            Kernel Tuner caches).
        seed: the search's seed (default: fixed, so a run repeats).
        report: report every evaluated configuration as an outcome.
        upload: upload the run as a trajectory at the end.
        timeout_s: the longest one memory request may take, its answer included.
        client: an existing `MemoryClient` (instead of url and api_key), bounded the same way.
        warn: where the one-line warnings go (default: standard error).
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        k: int = 5,
        chip: str | None = None,
        op: str | None = None,
        seed: int = 0,
        report: bool = True,
        upload: bool = True,
        timeout_s: float = 10.0,
        client: MemoryClient | None = None,
        warn: Callable[[str], None] = warn_stderr,
    ) -> None:
        if not 1 <= k <= 100:
            raise ValueError(f"k must be between 1 and 100, not {k}")
        self.k = k
        self.chip = chip
        self.op = op
        self.seed = seed
        self.report = report
        self.upload = upload
        self.warn = warn
        self.timeout_s = timeout_s
        self.url = url
        self.client: MemoryLink | None = None
        if client is not None or url is not None:
            where = url or "http://memory.invalid"
            self.client = MemoryLink(where, api_key, timeout_s=timeout_s, client=client)
        self.last_run: _Run | None = None

    def tune(self, searchspace: Any, runner: Any, tuning_options: Any) -> list[dict[str, Any]]:
        """Kernel Tuner's strategy entry point: returns the evaluated results."""
        from kernel_tuner.util import StopCriterionReached

        run = _Run(self, searchspace, runner, tuning_options)
        self.last_run = run
        try:
            run.search()
        except StopCriterionReached as stop:
            if getattr(tuning_options, "verbose", False):
                print(stop)
        finally:
            run.finish()
        return list(run.cost_func.results)


class _Run:
    """One tuning run: the space, the observations, and the conversation with the memory."""

    def __init__(self, strategy: MemoryStrategy, searchspace: Any, runner: Any, options: Any):
        from kernel_tuner.strategies.common import CostFunc

        self.strategy = strategy
        self.options = options
        self.cost_func = CostFunc(searchspace, options, runner)
        self.names = list(searchspace.tune_params)
        self.space = {name: tuple(values) for name, values in searchspace.tune_params.items()}
        full = 1
        for values in self.space.values():
            full *= len(values)
        self.valid: list[tuple[Any, ...]] | None = (
            [tuple(c) for c in searchspace.list] if searchspace.size < full else None
        )
        kernel_options = getattr(runner, "kernel_options", None) or {}
        self.kernel = str(kernel_options.get("kernel_name") or "kernel")
        problem = kernel_options.get("problem_size")
        problem = list(problem) if isinstance(problem, tuple | list) else problem
        self.task: dict[str, Any] = {
            "op": strategy.op or op_name(self.kernel),
            "kernel": self.kernel,
            "signature": {"problem_size": problem, "tune_params_keys": self.names},
        }
        reported = (
            reported_device_name(runner) if strategy.chip else device_name(runner, strategy.warn)
        )
        device = strategy.chip or reported
        # Simulation mode answers from a cache file: nothing is timed, and the device it
        # names ("Simulation", or the cache's) is no runtime's report.
        simulated = bool(getattr(runner, "simulation_mode", False))
        self.origin, self.device_reported = (
            ("simulated", None) if simulated else ("measured", reported)
        )
        self.space_size = int(getattr(searchspace, "size", 0) or 0)
        # Kernel Tuner reports some devices by an empty name or a gfx target (AMD GPUs under
        # HIP, every simulated run): the backend then comes from the kernel language, so the
        # run is stored as an unknown chip of that backend instead of being refused.
        self.chip = chip_context(device, kernel_backend(runner, kernel_options))
        self.context = {"chip": device}
        self.observations: list[Observation] = []
        self.attempts: list[AttemptRecord] = []
        self.sources: list[str] = []
        self.reported = 0
        self.best_ms: float | None = None
        self.notes: list[str] = []  # what the memory said that is no warning (busy)
        self.guard = MemoryGuard(strategy.client, self._warn, note=self.notes.append)
        self.asking = strategy.client is not None  # False once the memory holds nothing
        self.rounds = 0
        self.idle_rounds = 0
        self._told_large = False
        self._valid_keys: set[tuple[Any, ...]] | None = None

    # ------------------------------------------------------------------ search
    def search(self) -> None:
        while True:
            batch = self._ask() if self.asking and self.guard.available else None
            if batch is None:
                batch = self._own(self.strategy.k)
            if not batch:
                return  # the whole space is evaluated
            for config, retrieval_id, used, source in batch:
                self._evaluate(config, retrieval_id, used, source)

    def _ask(self) -> list[tuple[dict[str, Any], str | None, list[str], str]] | None:
        """The memory's next round, or None when it cannot help this round (the guard decides
        when it is asked again)."""
        space: dict[str, Any] = {"params": {n: list(v) for n, v in self.space.items()}}
        if self.valid is not None and len(self.valid) <= VALID_SENT_MAX:
            space["valid"] = [dict(zip(self.names, c, strict=True)) for c in self.valid]
        elif self.valid is not None and not self._told_large:
            self._told_large = True
            self.strategy.warn(
                f"the space has {len(self.valid):,} valid configurations, more than the memory "
                f"takes in one request ({VALID_SENT_MAX:,}): it is asked over the parameters "
                "alone, and what it suggests outside your restrictions is skipped"
            )
        observations = [
            {"config": dict(o.config), "latency_ms": o.latency_ms, "feasible": o.feasible}
            for o in self.observations
        ]
        answer = self.guard.ask(
            "suggest",
            lambda link: link.suggest(
                self.task,
                self.context,
                space,
                observations=observations,
                k=self.strategy.k,
                seed=self.strategy.seed + self.rounds,
            ),
        )
        if answer is None:  # failed, or busy: this round is the run's own
            return None
        self.rounds += 1
        tried = [config_key(self.space, o.config) for o in self.observations]
        valid = self.valid_keys() if self.valid is not None else None
        suggestions, refused = usable_suggestions(answer, self.space, valid, tried, known=True)
        if self.rounds == 1 and not refused and all(s.source == "search" for s in suggestions):
            # Up and answering, with nothing for this kernel: not asked again, but the run
            # still goes in, so the next user starts from it.
            self.asking = False
            self.strategy.warn(
                f"the memory holds nothing for {self.kernel} on {self.context['chip']}; "
                "own search continues"
            )
            return None
        if not suggestions:
            self.idle_rounds += 1
            if self.idle_rounds >= IDLE_ROUNDS:
                self.guard.fail(
                    f"unavailable (suggest: {self.idle_rounds} rounds held no untried "
                    f"configuration of this space; {refused} refused)"
                )
            return None
        self.idle_rounds = 0
        retrieval_id = answer.get("retrieval_id") if isinstance(answer, dict) else None
        retrieval_id = retrieval_id if isinstance(retrieval_id, str) and retrieval_id else None
        return [(s.config, retrieval_id, s.lessons, s.source or "memory") for s in suggestions]

    def valid_keys(self) -> set[tuple[Any, ...]]:
        """The valid configurations as identity keys (`search.suggest.identity`), built once."""
        if self._valid_keys is None:
            self._valid_keys = {identity(key) for key in self.valid or ()}
        return self._valid_keys

    def _warn(self, message: str) -> None:
        """The guard's one warning line for a failure of the memory."""
        where = f"memory at {self.strategy.url}" if self.strategy.url else "the memory"
        self.strategy.warn(f"{where} {message}; own search continues")

    def _own(self, n: int) -> list[tuple[dict[str, Any], str | None, list[str], str]]:
        """n configurations of the run's own search (as the service would fill them)."""
        state = SuggestState(
            space=self.space,
            stage="refine" if self.best_ms is not None else "draft",
            lessons=(),
            observations=tuple(self.observations),
            valid=self.valid,
        )
        rng = random.Random(self.strategy.seed * 1_000_003 + len(self.observations))
        out: list[tuple[dict[str, Any], str | None, list[str], str]] = []
        for _ in range(n):
            try:
                step = state.offer(wide_search_step(state, rng))
            except SpaceExhausted:
                break
            out.append((step.config, None, [], "search"))
        return out

    def _evaluate(
        self, config: dict[str, Any], retrieval_id: str | None, used: list[str], source: str
    ) -> None:
        """Evaluate through Kernel Tuner's cost function; record and report what came back
        (also when the cost function stops the run after this evaluation)."""
        before = len(self.cost_func.results)
        try:
            self.cost_func([config[name] for name in self.names])
        finally:
            for result in self.cost_func.results[before:]:
                self._record(result, retrieval_id, used, source)

    def _record(
        self, result: dict[str, Any], retrieval_id: str | None, used: list[str], source: str
    ) -> None:
        config = {name: result.get(name) for name in self.names}
        error = result.get("__error__")
        latency = result.get("time")
        latency_ms = float(latency) if error is None and isinstance(latency, int | float) else None
        feasible = latency_ms is not None and latency_ms > 0
        latency_ms = latency_ms if feasible else None
        kind = type(error).__name__ if error is not None else None
        compiled = kind not in ("CompilationFailedConfig", "InvalidConfig")
        self.observations.append(
            Observation(config, feasible, self._score(result) if feasible else None)
        )
        self.attempts.append(
            AttemptRecord(
                index=len(self.attempts),
                params=config,
                compiled=compiled,
                correct=True if feasible else (None if not compiled else False),
                error_category=None if feasible else ("compile" if not compiled else "runtime"),
                error=kind,
                latency_ms=latency_ms,
            )
        )
        self.sources.append(source)
        if self.strategy.report and retrieval_id is not None:
            outcome = Outcome(
                compiled=compiled,
                correct=feasible if compiled else None,
                latency_ms=latency_ms,
                best_before_ms=self.best_ms,
                error=kind,
                provenance={"origin": self.origin, "device_reported": self.device_reported},
                **timed_attempt(config, result.get("times"), latency_ms),
            )
            self.guard.submit(lambda link: self._report(link, retrieval_id, outcome, used))
        if latency_ms is not None and (self.best_ms is None or latency_ms < self.best_ms):
            self.best_ms = latency_ms

    def _report(
        self, link: MemoryLink, retrieval_id: str, outcome: Outcome, used: list[str]
    ) -> None:
        link.report(retrieval_id, outcome, used=used)
        self.reported += 1

    def _score(self, result: dict[str, Any]) -> float | None:
        """Lower is better, as the search expects: the objective, inverted if maximised."""
        objective = list(getattr(self.options, "objective", None) or ["time"])[0]
        higher = list(getattr(self.options, "objective_higher_is_better", None) or [False])[0]
        value = result.get(objective)
        if not isinstance(value, int | float) or value <= 0:
            return None
        return 1000.0 / float(value) if higher else float(value)

    def finish(self) -> None:
        """Upload the run as a trajectory (once, at the end, unless the memory is left alone
        after a failure), then wait for the reports in flight at most two deadlines; failures
        only warn."""
        if self.strategy.client is None:
            return
        if self.strategy.upload and self.attempts:
            if self.chip.backend == UNKNOWN_BACKEND:
                self.strategy.warn(
                    f"the run is not uploaded: Kernel Tuner names the device {self.chip.raw!r} "
                    "and its kernel language does not tell the backend (pass chip= or lang=)"
                )
            else:
                run = self.trajectory()
                self.guard.submit(lambda link: link.upload_trajectories([run]))
        self.guard.flush(2 * self.strategy.timeout_s)

    def trajectory(self) -> dict[str, Any]:
        """The run in the canonical trajectory shape (`POST /v1/trajectories`)."""
        record = TrajectoryRecord(
            source_format="native",
            source=f"kernel-tuner:{uuid.uuid4().hex}",
            task=TaskSpec(
                op=str(self.task["op"]), kernel=self.kernel, signature=self.task["signature"]
            ),
            context=ContextSpec(
                chip=self.chip.chip, backend=self.chip.backend, chip_raw=self.chip.raw
            ),
            attempts=self.attempts,
            evidence={"tool": "kernel_tuner", "strategy": "tunemem", "sources": self.sources},
            provenance=Provenance(self.origin, self.coverage(), self.device_reported),
        )
        return record.to_dict()

    def coverage(self) -> str:
        """complete when the run evaluated every valid configuration, else partial."""
        whole = self.space_size and len(set(self.keys())) >= self.space_size
        return "complete" if whole else "partial"

    def keys(self) -> Sequence[tuple[Any, ...]]:
        """The evaluated configurations in order (as tuples of the space's values)."""
        return [config_key(self.space, o.config) for o in self.observations]
