"""Memory first: time the memory's best candidates for a new shape with Helion's own
benchmarking and keep the fastest; run Helion's search (seeded) only when they are not trusted.

`memory_first_autotune(kernel, args, timings, ...)` ranks the remembered timings for the call's
shape (`ranking.rank_seeds`, nearest shape first), asks `trust.judge` whether those candidates
may stand in for Helion's search, and then either

- "memory": compiles and times the candidates through Helion's `FiniteSearch` (the search
  Helion itself runs for `helion.kernel(configs=[...])`: its benchmarking, accuracy check and
  `HELION_AUTOTUNE_LOG`), sets the fastest on the bound kernel and returns; or
- "search": runs Helion's own autotune at the kernel's effort with the ranking's `seed_k`
  best as `autotune_seed_configs` (what `HelionMemory.seed_configs(k=seed_k)` gives).

A memory that is wrong never breaks the tuning: when no candidate compiles and runs, or timing
them raises, the mode falls back to the search and says why (`MemoryFirstOutcome.fell_back`).
Helion is imported only by `HelionLibrary`, the driver that talks to it; tests pass a fake.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tunemem.agent_client.tuners.helion.ranking import RankedSeed, Timing, rank_seeds
from tunemem.agent_client.tuners.helion.trust import Trust, TrustPolicy, judge

__all__ = [
    "CandidateTiming",
    "MemoryFirstPlan",
    "plan_memory_first",
    "HelionDriver",
    "HelionLibrary",
    "MemoryFirstOutcome",
    "memory_first_autotune",
]

DEFAULT_CANDIDATES = 8
DEFAULT_SEEDS = 4


@dataclass(frozen=True)
class CandidateTiming:
    """One candidate as Helion timed it: ms (None when it did not run) and Helion's status."""

    config: dict[str, Any]
    time_ms: float | None
    status: str


@dataclass(frozen=True)
class MemoryFirstPlan:
    """What the mode will do, decided before Helion runs: the verdict, the candidates it would
    time, and the seeds its search would take."""

    trust: Trust
    candidates: list[RankedSeed]
    seeds: list[RankedSeed]


def plan_memory_first(
    timings: Iterable[Timing],
    *,
    kernel_name: str,
    shape: Sequence[int],
    device: str,
    k: int = DEFAULT_CANDIDATES,
    seed_k: int = DEFAULT_SEEDS,
    policy: TrustPolicy | None = None,
) -> MemoryFirstPlan:
    """Rank the candidates (`k`) and the seeds (`seed_k`, as `HelionMemory.seed_configs`
    ranks them) of `kernel_name` at `shape` on `device`, and judge the candidates (pure)."""
    if k < 1 or seed_k < 0:
        raise ValueError(f"k must be at least 1 and seed_k at least 0, not {k} and {seed_k}")
    remembered = [t for t in timings if t.kernel == kernel_name]
    candidates = rank_seeds(remembered, kernel=kernel_name, shape=shape, device=device, k=k)
    seeds = rank_seeds(remembered, kernel=kernel_name, shape=shape, device=device, k=seed_k)
    verdict = judge(
        remembered,
        kernel=kernel_name,
        shape=shape,
        device=device,
        candidates=len(candidates),
        policy=policy,
    )
    return MemoryFirstPlan(verdict, candidates, seeds)


@dataclass
class MemoryFirstOutcome:
    """What the mode did: which path, the configuration now set on the kernel, and why."""

    mode: Literal["memory", "search"]
    config: dict[str, Any]
    trust: Trust
    candidates: list[RankedSeed]
    timed: list[CandidateTiming] = field(default_factory=list)
    fell_back: str | None = None
    wall_s: float = 0.0
    bound: Any = None


class HelionDriver(Protocol):
    """The four things the mode asks of Helion (`HelionLibrary`; a fake in tests)."""

    def bind(self, kernel: Any, args: Sequence[Any]) -> Any:
        """The kernel bound to the call's arguments (Helion's `kernel.bind(args)`)."""

    def time_configs(
        self, bound: Any, args: Sequence[Any], configs: Sequence[dict[str, Any]]
    ) -> list[CandidateTiming]:
        """Compile and time every configuration with Helion's benchmarking, in order."""

    def use(self, bound: Any, config: dict[str, Any]) -> None:
        """Set `config` on the bound kernel, so the next call runs it."""

    def search(
        self, bound: Any, args: Sequence[Any], seeds: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """Helion's own autotune with `seeds` as `autotune_seed_configs`; the chosen config."""


class HelionLibrary:
    """`HelionDriver` over Helion itself (1.4's API: `FiniteSearch`, `BoundKernel.set_config`,
    `BoundKernel.autotune`); imports Helion on first use."""

    def bind(self, kernel: Any, args: Sequence[Any]) -> Any:
        return kernel.bind(tuple(args))

    def time_configs(
        self, bound: Any, args: Sequence[Any], configs: Sequence[dict[str, Any]]
    ) -> list[CandidateTiming]:
        import helion
        from helion.autotuner import FiniteSearch

        class _Recorded(FiniteSearch):  # type: ignore[misc]
            """Helion's finite search, keeping every candidate's result."""

            results: list[Any] = []

            def _autotune(self) -> Any:
                self.results = list(self.benchmark_batch(list(self.configs), desc="memory"))
                ok = [r for r in self.results if r.status == "ok" and math.isfinite(r.perf)]
                return min(ok, key=lambda r: r.perf).config if ok else self.configs[0]

        settings = bound.settings
        saved = settings.autotune_precompile
        # As Helion does for `configs=[...]`: a short fixed list is compiled in process.
        settings.autotune_precompile = None
        try:
            search = _Recorded(bound, tuple(args), [helion.Config(**c) for c in configs])
            search.autotune(skip_cache=True)
        finally:
            settings.autotune_precompile = saved
        return [
            CandidateTiming(
                dict(config),
                float(r.perf) if r.status == "ok" and math.isfinite(r.perf) else None,
                str(r.status),
            )
            for config, r in zip(configs, search.results, strict=True)
        ]

    def use(self, bound: Any, config: dict[str, Any]) -> None:
        import helion

        bound.set_config(helion.Config(**config))

    def search(
        self, bound: Any, args: Sequence[Any], seeds: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        import helion

        settings = bound.settings
        saved = settings.autotune_seed_configs
        if seeds:
            settings.autotune_seed_configs = [helion.Config(**s) for s in seeds]
        try:
            chosen = bound.autotune(tuple(args), force=True)
        finally:
            settings.autotune_seed_configs = saved
        return dict(chosen.config)


def memory_first_autotune(
    kernel: Any,
    args: Sequence[Any],
    timings: Iterable[Timing],
    *,
    kernel_name: str,
    shape: Sequence[int],
    device: str,
    k: int = DEFAULT_CANDIDATES,
    seed_k: int = DEFAULT_SEEDS,
    policy: TrustPolicy | None = None,
    driver: HelionDriver | None = None,
) -> MemoryFirstOutcome:
    """Tune `kernel` for `args`: the memory's `k` candidates when trusted, else Helion's
    search seeded with the ranking's `seed_k` best (see the module).

    Args:
        kernel: the Helion kernel (`helion.kernel(...)`); its settings (effort, log) apply.
        args: the call's arguments.
        timings: what the memory remembers of this kernel (other kernels are ignored).
        kernel_name, shape, device: the memory's keys of this call (`seeds.kernel_name`,
            `seeds.shape_of`, the chip's name).
        k: candidates timed in the memory path; seed_k: seeds given to the search.
        policy: when the candidates are trusted (`trust.TrustPolicy`).
        driver: how Helion is called; default `HelionLibrary()`.
    """
    started = time.perf_counter()
    plan = plan_memory_first(
        timings,
        kernel_name=kernel_name,
        shape=shape,
        device=device,
        k=k,
        seed_k=seed_k,
        policy=policy,
    )
    trust, candidates = plan.trust, plan.candidates
    driver = driver or HelionLibrary()
    bound = driver.bind(kernel, args)
    timed: list[CandidateTiming] = []
    fell_back = None
    if trust.trusted:
        try:
            timed = driver.time_configs(bound, args, [dict(c.config) for c in candidates])
            ran = [t for t in timed if t.time_ms is not None and t.time_ms > 0]
            if ran:
                best = min(ran, key=lambda t: t.time_ms or math.inf)
                driver.use(bound, best.config)
                wall = time.perf_counter() - started
                return MemoryFirstOutcome(
                    "memory", best.config, trust, candidates, timed, None, wall, bound
                )
            fell_back = "no candidate compiled and ran"
        except Exception as exc:  # the candidates are untrusted input: Helion's search decides
            fell_back = f"the candidates failed ({type(exc).__name__}: {exc})"[:300]
    chosen = driver.search(bound, args, [dict(s.config) for s in plan.seeds])
    return MemoryFirstOutcome(
        "search",
        chosen,
        trust,
        candidates,
        timed,
        fell_back,
        time.perf_counter() - started,
        bound,
    )
