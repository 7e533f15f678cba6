"""Memory first for Helion: the trust rule by hand-computed numbers, the mode's two paths and
its fallbacks through a fake Helion driver, `HelionMemory.autotune` / `.plan` over a fake
memory (and a dead one), and `HelionLibrary` against a stand-in of Helion 1.4's API (the real
Helion needs a GPU to time anything)."""

from __future__ import annotations

import math
import sys
import types
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tunemem.agent_client.tuners.helion import (
    HelionMemory,
    MemoryUnavailableWarning,
    Timing,
    TrustPolicy,
    memory_first_autotune,
    plan_memory_first,
)
from tunemem.agent_client.tuners.helion.memory_first import CandidateTiming, HelionLibrary
from tunemem.agent_client.tuners.helion.trust import judge
from tunemem.ingest.readers.helion_autotune import flatten_config

SHAPE = (4096, 4096, 4096)
NEAR = (8192, 8192, 8192)  # 3 units from SHAPE
FAR = (64, 64, 64)  # 18 units from NEAR


def cfg(block: int, warps: int = 4) -> dict[str, Any]:
    return {"block_sizes": [block], "num_warps": warps}


def flat(times: Sequence[float], shape: tuple[int, ...] = SHAPE, device: str = "h100"):
    """A flat optimum: configurations block 1, 2, 3, ... with these times."""
    return [Timing("k", shape, device, cfg(i + 1), ms) for i, ms in enumerate(times)]


# -- the trust rule (pure) -------------------------------------------------------------------


def test_a_flat_optimum_near_by_is_trusted() -> None:
    # relative speeds 1, 1/1.05 = 0.952, 1/1.1 = 0.909, 0.5: three reach 0.9.
    verdict = judge(
        flat([1.0, 1.05, 1.1, 2.0]), kernel="k", shape=NEAR, device="h100", candidates=4
    )
    assert verdict.trusted
    assert (verdict.near_best, verdict.timed_there, verdict.distance) == (3, 4, 3.0)
    assert (
        verdict.reason
        == "3 of 4 configurations near the best at [4096, 4096, 4096] on h100, 3.00 away"
    )


def test_a_lone_optimum_is_not_trusted() -> None:
    # 1, 0.5, 0.33, 0.25: one configuration near the best (the matmul of the H100 runs).
    verdict = judge(flat([1.0, 2.0, 3.0, 4.0]), kernel="k", shape=NEAR, device="h100", candidates=4)
    assert not verdict.trusted and verdict.near_best == 1
    assert "only 1 of 4 configurations reached 0.9 of the best" in verdict.reason


def test_far_few_and_empty_are_not_trusted() -> None:
    memory = flat([1.0, 1.0, 1.0], shape=FAR)
    verdict = judge(memory, kernel="k", shape=NEAR, device="h100", candidates=3)
    assert not verdict.trusted and verdict.distance == 21.0 and "21.00 away" in verdict.reason
    near = flat([1.0, 1.0, 1.0])
    assert not judge(near, kernel="k", shape=NEAR, device="h100", candidates=1).trusted
    nothing = judge(near, kernel="other", shape=NEAR, device="h100", candidates=3)
    assert (nothing.trusted, nothing.reason) == (
        False,
        "the memory holds no timings of this kernel",
    )


def test_the_nearest_shape_decides_and_another_chip_is_farther() -> None:
    memory = flat([1.0, 2.0, 3.0], shape=NEAR) + flat([1.0, 1.0, 1.0], shape=SHAPE)
    # NEAR (the target itself, 0 away) holds a lone optimum: not trusted, though SHAPE is flat.
    assert not judge(memory, kernel="k", shape=NEAR, device="h100", candidates=3).trusted
    # Measured on another chip, NEAR is 0 + 2 away and SHAPE (3 away) is the nearest.
    other = flat([1.0, 2.0, 3.0], shape=NEAR, device="a100") + flat([1.0, 1.0, 1.0])
    verdict = judge(other, kernel="k", shape=NEAR, device="h100", candidates=3)
    assert verdict.nearest_device == "a100" and verdict.distance == 2.0
    strict = TrustPolicy(other_device_penalty=4.0)
    verdict = judge(other, kernel="k", shape=NEAR, device="h100", candidates=3, policy=strict)
    assert verdict.trusted and verdict.nearest_shape == SHAPE


def test_bad_policies_are_refused() -> None:
    with pytest.raises(ValueError, match="min_candidates must be at least 2"):
        TrustPolicy(min_candidates=1)
    with pytest.raises(ValueError, match="near_best"):
        TrustPolicy(near_best=1.5)
    with pytest.raises(ValueError, match="max_distance"):
        TrustPolicy(max_distance=math.nan)


# -- the mode through a fake driver ----------------------------------------------------------


class FakeDriver:
    """Helion's part, scripted: each configuration's time by its block size (None: it fails)."""

    def __init__(self, times: dict[int, float | None], raises: Exception | None = None) -> None:
        self.times, self.raises = times, raises
        self.timed: list[list[dict[str, Any]]] = []
        self.used: list[dict[str, Any]] = []
        self.searched: list[list[dict[str, Any]]] = []

    def bind(self, kernel: Any, args: Sequence[Any]) -> Any:
        return ("bound", kernel)

    def time_configs(self, bound: Any, args: Sequence[Any], configs: Sequence[dict[str, Any]]):
        self.timed.append(list(configs))
        if self.raises is not None:
            raise self.raises
        out = []
        for c in configs:
            ms = self.times.get(c["block_sizes"][0])
            out.append(CandidateTiming(dict(c), ms, "ok" if ms is not None else "error"))
        return out

    def use(self, bound: Any, config: dict[str, Any]) -> None:
        self.used.append(config)

    def search(self, bound: Any, args: Sequence[Any], seeds: Sequence[dict[str, Any]]):
        self.searched.append(list(seeds))
        return cfg(99)


FLAT = flat([1.0, 1.02, 1.05, 1.08, 1.3])  # blocks 1..5, four near the best


def run(memory: list[Timing], driver: FakeDriver, **kw: Any):
    return memory_first_autotune(
        "kernel", (), memory, kernel_name="k", shape=NEAR, device="h100", driver=driver, **kw
    )


def test_trusted_candidates_are_timed_and_the_fastest_is_set() -> None:
    driver = FakeDriver({1: 0.9, 2: 0.5, 3: 0.7, 4: None, 5: 0.8})
    outcome = run(FLAT, driver, k=5)
    assert outcome.mode == "memory" and outcome.fell_back is None
    assert [c["block_sizes"][0] for c in driver.timed[0]] == [1, 2, 3, 4, 5]
    assert outcome.config == cfg(2) and driver.used == [cfg(2)] and driver.searched == []
    assert [t.status for t in outcome.timed] == ["ok", "ok", "ok", "error", "ok"]


def test_untrusted_candidates_go_to_helions_search_as_seeds() -> None:
    driver = FakeDriver({})
    outcome = run(flat([1.0, 2.0, 3.0]), driver, k=3, seed_k=2)
    assert outcome.mode == "search" and driver.timed == [] and driver.used == []
    assert driver.searched == [[cfg(1), cfg(2)]] and outcome.config == cfg(99)
    assert not outcome.trust.trusted


def test_candidates_that_all_fail_or_raise_fall_back_to_the_search() -> None:
    driver = FakeDriver({})
    outcome = run(FLAT, driver, k=3)
    assert (outcome.mode, outcome.fell_back) == ("search", "no candidate compiled and ran")
    assert len(driver.searched) == 1
    driver = FakeDriver({}, raises=RuntimeError("Triton said no"))
    outcome = run(FLAT, driver, k=3)
    assert outcome.fell_back == "the candidates failed (RuntimeError: Triton said no)"
    assert outcome.mode == "search" and driver.used == []
    # Setting the winner can fail too (Helion compiles it again): the search decides.
    driver = FakeDriver({1: 0.5, 2: 0.6})
    driver.use = lambda bound, config: (_ for _ in ()).throw(ValueError("bad config"))  # type: ignore[method-assign]
    outcome = run(FLAT, driver, k=2)
    assert (outcome.mode, outcome.fell_back) == (
        "search",
        "the candidates failed (ValueError: bad config)",
    )


def test_the_plan_is_the_modes_decision_without_helion() -> None:
    plan = plan_memory_first(FLAT, kernel_name="k", shape=NEAR, device="h100", k=5, seed_k=2)
    assert plan.trust.trusted and len(plan.candidates) == 5 and len(plan.seeds) == 2
    with pytest.raises(ValueError, match="k must be at least 1"):
        plan_memory_first(FLAT, kernel_name="k", shape=NEAR, device="h100", k=0)


# -- HelionMemory over a memory ---------------------------------------------------------------


def lesson(shape: tuple[int, ...], config: dict[str, Any], ms: float) -> dict[str, Any]:
    return {
        "hint": {"latency_ms": ms, "config": flatten_config(config)},
        "applicability": {"signature": {"shape": list(shape)}, "chips": ["h100"]},
    }


class FakeMemory:
    def __init__(self, lessons: list[dict[str, Any]] | None, fail: bool = False) -> None:
        self.lessons, self.fail, self.asked = lessons or [], fail, []

    def get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((path, dict(params)))
        if self.fail:
            raise ConnectionError("connection refused")
        return {"data": self.lessons}


def test_helion_memory_autotune_from_the_memorys_exemplars() -> None:
    memory = FakeMemory([lesson(SHAPE, cfg(b), ms) for b, ms in ((1, 1.0), (2, 1.05), (3, 1.1))])
    helion_memory = HelionMemory("http://unused", client=memory)
    plan = helion_memory.plan("k", NEAR, chip="NVIDIA H100")
    assert plan.trust.trusted and [c.config for c in plan.candidates][0] == cfg(1)
    driver = FakeDriver({1: 0.4, 2: 0.3, 3: 0.5})
    outcome = helion_memory.autotune("k", NEAR, chip="NVIDIA H100", driver=driver)
    assert outcome.mode == "memory" and outcome.config == cfg(2)
    assert memory.asked[-1] == ("/v1/lessons", {"kind": "exemplar", "op": "k", "limit": 500})
    assert helion_memory.last_seeds == outcome.candidates


def test_a_dead_memory_is_helions_own_search_after_one_warning() -> None:
    helion_memory = HelionMemory("http://unused", client=FakeMemory(None, fail=True))
    driver = FakeDriver({})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = helion_memory.autotune("k", NEAR, chip="NVIDIA H100", driver=driver)
        outcome2 = helion_memory.autotune("k", NEAR, chip="NVIDIA H100", driver=driver)
    assert [w.category for w in caught] == [MemoryUnavailableWarning]
    assert outcome.mode == outcome2.mode == "search" and driver.searched == [[], []]
    assert outcome.trust.reason == "the memory holds no timings of this kernel"


# -- HelionLibrary against a stand-in of Helion 1.4's API -------------------------------------


class _Result:
    def __init__(self, config: Any, perf: float, status: str) -> None:
        self.config, self.perf, self.status = config, perf, status


@pytest.fixture
def stand_in_helion(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """`helion.Config` and `helion.autotuner.FiniteSearch` as Helion 1.4 shapes them: the
    search takes (bound kernel, args, configs), `autotune(skip_cache=)` calls `_autotune`,
    which reads `benchmark_batch(configs)` (one result per configuration, in order)."""
    seen: dict[str, Any] = {}

    class Config(dict):
        def __init__(self, **kw: Any) -> None:
            super().__init__(kw)
            self.config = dict(kw)

    class FiniteSearch:
        def __init__(self, kernel: Any, args: Any, configs: list[Any]) -> None:
            self.kernel, self.args, self.configs = kernel, args, list(configs)
            self.settings = kernel.settings

        def benchmark_batch(self, configs: list[Any], *, desc: str = "") -> list[_Result]:
            seen["precompile_during"] = self.settings.autotune_precompile
            perfs = [0.5, math.inf, 0.2]
            return [
                _Result(c, p, "ok" if math.isfinite(p) else "error")
                for c, p in zip(configs, perfs, strict=False)
            ]

        def autotune(self, *, skip_cache: bool = False) -> Any:
            seen["skip_cache"] = skip_cache
            return self._autotune()

    helion = types.ModuleType("helion")
    helion.Config = Config  # type: ignore[attr-defined]
    autotuner = types.ModuleType("helion.autotuner")
    autotuner.FiniteSearch = FiniteSearch  # type: ignore[attr-defined]
    helion.autotuner = autotuner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "helion", helion)
    monkeypatch.setitem(sys.modules, "helion.autotuner", autotuner)
    yield seen


class _Bound:
    def __init__(self) -> None:
        self.settings = types.SimpleNamespace(
            autotune_precompile="fork", autotune_seed_configs=None
        )
        self.set: list[Any] = []
        self.autotuned: list[Any] = []

    def set_config(self, config: Any) -> None:
        self.set.append(config)

    def autotune(self, args: Any, *, force: bool) -> Any:
        self.autotuned.append((self.settings.autotune_seed_configs, force))
        return types.SimpleNamespace(config=cfg(7))


def test_helion_library_times_through_finite_search(stand_in_helion: dict[str, Any]) -> None:
    bound = _Bound()
    timed = HelionLibrary().time_configs(bound, (), [cfg(1), cfg(2), cfg(3)])
    assert [(t.config, t.time_ms, t.status) for t in timed] == [
        (cfg(1), 0.5, "ok"),
        (cfg(2), None, "error"),
        (cfg(3), 0.2, "ok"),
    ]
    # In process while timing, as Helion does for configs=[...]; the user's setting after.
    assert stand_in_helion == {"skip_cache": True, "precompile_during": None}
    assert bound.settings.autotune_precompile == "fork"


def test_helion_library_sets_and_seeds(stand_in_helion: dict[str, Any]) -> None:
    bound = _Bound()
    HelionLibrary().use(bound, cfg(3))
    assert bound.set == [cfg(3)]
    chosen = HelionLibrary().search(bound, (), [cfg(1)])
    assert chosen == cfg(7) and bound.autotuned == [([cfg(1)], True)]
    assert bound.settings.autotune_seed_configs is None  # restored
