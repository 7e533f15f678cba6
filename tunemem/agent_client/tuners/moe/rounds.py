"""The rounds of `tunemem tune moe`: the run's state, and what each round times.

The first round times other GPUs' choices nearest each batch size plus vLLM's default
(without a memory: the default and a seeded random sample); later rounds time the nearest
batch sizes' best, the memory's suggestions given the batch size's observations, and the
nearest untimed configurations to the batch size's best so far. Every round goes back to the
memory (`memory.MoeMemory.report`) before the next.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tunemem.agent_client.tuners.moe.memory import KERNEL, OP, MoeMemory, rank_shipped
from tunemem.kernels.moe_space import DTYPES, PARAMS, config_key, config_problem, default_config

FALLBACK_SEED = 0
Benchmark = Callable[..., float]


@dataclass(frozen=True)
class MoeShape:
    """One MoE layer as vLLM names it: N is the intermediate size per tensor-parallel shard."""

    experts: int
    n: int
    hidden: int
    top_k: int
    dtype: str = "bfloat16"

    def __post_init__(self) -> None:
        for name in ("experts", "n", "hidden", "top_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed the experts ({self.experts})")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {self.dtype!r}")


def grid_distance(a: dict[str, int], b: dict[str, int]) -> float:
    """Steps between two configurations: octaves apart per block size, warps and group size,
    stages apart (vLLM's grid is powers of two but for num_stages)."""
    total = 0.0
    for name in PARAMS:
        x, y = a[name], b[name]
        if name == "num_stages":
            total += abs(x - y)
        else:
            total += abs(math.log2(max(x, 1)) - math.log2(max(y, 1)))
    return total


def runtime_device_name() -> str | None:
    """The GPU torch reports in this process, or None (no torch, no GPU)."""
    try:
        import torch

        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name())
    except ImportError:
        pass
    return None


def default_device_name() -> str:
    name = runtime_device_name()
    if name is None:
        raise ValueError("no GPU here: give device_name (vLLM's file name carries it)")
    return name


def default_benchmark() -> Benchmark:
    from tunemem.kernels.moe_timing import benchmark_config

    return benchmark_config


class Run:
    """The state of one tuning run: the pool, the memory, the timings per batch size."""

    def __init__(
        self,
        shape: MoeShape,
        batch_sizes: list[int],
        benchmark: Benchmark,
        memory: MoeMemory,
        device_name: str,
        pool: list[dict[str, int]],
        budget: int,
        seed: int,
        context: dict[str, Any],
    ) -> None:
        self.shape, self.batch_sizes, self.benchmark = shape, batch_sizes, benchmark
        self.memory, self.device_name, self.budget, self.seed = memory, device_name, budget, seed
        self.pool = pool
        self.pool_keys = {config_key(c) for c in pool}
        self.context = context
        self.provenance: dict[str, Any] = {"origin": "unstated", "device_reported": None}
        # Rounds in which nothing has timed yet anywhere in the run wait here: a run that
        # times nothing (no GPU, a broken kernel) uploads nothing.
        self.held: list[tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = []
        self.timed: dict[int, list[dict[str, Any]]] = {m: [] for m in batch_sizes}
        self.seen: dict[int, set[tuple[int, ...]]] = {m: set() for m in batch_sizes}
        self.exhausted: set[int] = set()

    def task(self, m: int) -> dict[str, Any]:
        s = self.shape
        signature = {
            "E": s.experts,
            "N": s.n,
            "dtype": s.dtype,
            "block_shape": None,
            "M": m,
            "hidden": s.hidden,
            "topk": s.top_k,
        }
        return {"op": OP, "kernel": KERNEL, "signature": signature, "dtype": s.dtype}

    def measure(
        self,
        m: int,
        config: dict[str, int],
        origin: str,
        round_no: int,
        retrieval_id: str | None = None,
        lessons: list[str] | None = None,
    ) -> dict:
        s = self.shape
        try:
            us = float(
                self.benchmark(
                    config,
                    m,
                    s.experts,
                    2 * s.n,
                    s.hidden,
                    s.top_k,
                    _dtype_arg(s),
                    s.dtype == "fp8_w8a8",
                    False,
                )
            )
            error = None if math.isfinite(us) and us > 0 else f"timing returned {us!r}"
        except Exception as exc:  # a failing configuration is an outcome (vLLM skips these)
            us, error = None, f"{type(exc).__name__}: {str(exc)[:200]}"
        row = {
            "config": dict(config),
            "us": us if error is None else None,
            "error": error,
            "origin": origin,
            "round": round_no,
            "retrieval_id": retrieval_id,
            "lessons": lessons or [],
        }
        self.timed[m].append(row)
        self.seen[m].add(config_key(config))
        return row

    def fresh(self, m: int, config: dict[str, int]) -> bool:
        key = config_key(config)
        return key in self.pool_keys and key not in self.seen[m]

    def ranked(self, m: int) -> list[dict[str, int]]:
        rows = sorted((r for r in self.timed[m] if r["us"] is not None), key=lambda r: r["us"])
        return [r["config"] for r in rows]

    def time_round(
        self, m: int, picks: list[tuple[dict[str, int], str, str | None, list[str]]], round_no: int
    ) -> None:
        before = [r["us"] for r in self.timed[m] if r["us"] is not None]
        # The last door before the user's timing function: nothing outside vLLM's space.
        rows = [
            self.measure(m, c, origin, round_no, rid, ids)
            for c, origin, rid, ids in picks
            if config_problem(c) is None
        ]
        evidence = {
            "round": round_no,
            "batch_size": m,
            "device": self.device_name,
            "best_before_us": min(before) if before else None,
        }
        self.held.append((self.task(m), rows, evidence))
        if self.any_timed():
            for task, held_rows, held_evidence in self.held:
                self.memory.report(task, self.context, held_rows, held_evidence, self.provenance)
            self.held.clear()

    def any_timed(self) -> bool:
        """Whether any configuration of any batch size has timed in this run."""
        return any(r["us"] is not None for rows in self.timed.values() for r in rows)


def _dtype_arg(shape: MoeShape) -> Any:
    """The dtype as vLLM's benchmark_config receives it (a torch dtype where torch is here)."""
    try:
        import torch

        return torch.float8_e4m3fn if shape.dtype == "fp8_w8a8" else torch.bfloat16
    except ImportError:
        return shape.dtype


def first_round(run: Run, m: int, shipped: list[Any], sims: dict[str, float], size: int):
    """Other GPUs' choices nearest this batch size, then vLLM's default (or, without a
    memory, the default then a seeded random sample of the pool)."""
    picks: list[tuple[dict[str, int], str, str | None, list[str]]] = []
    default = default_config(m, run.shape.experts, run.shape.dtype)
    if shipped:
        s = run.shape
        for _, entry in rank_shipped(shipped, s.experts, s.n, s.dtype, m, sims):
            if len(picks) >= size - 1:
                break
            if run.fresh(m, entry.config) and all(entry.config != p[0] for p in picks):
                picks.append(
                    (entry.config, f"shipped:{entry.chip}:M={entry.m}", None, [entry.lesson_id])
                )
    if run.fresh(m, default) and all(default != p[0] for p in picks):
        picks.append((default, "vllm-default", None, []))
    rng = random.Random(f"{FALLBACK_SEED}:{m}")
    for config in rng.sample(run.pool, len(run.pool)):
        if len(picks) >= size:
            break
        if run.fresh(m, config) and all(config != p[0] for p in picks):
            picks.append((config, "sample", None, []))
    return picks


def later_round(run: Run, m: int, size: int, round_no: int):
    """Neighbouring batch sizes' best, the memory's suggestions, then local moves."""
    picks: list[tuple[dict[str, int], str, str | None, list[str]]] = []

    def take(
        config: dict[str, int], origin: str, rid: str | None = None, ids: list[str] | None = None
    ) -> None:
        if len(picks) < size and run.fresh(m, config) and all(config != p[0] for p in picks):
            picks.append((config, origin, rid, ids or []))

    share = max(1, size // 3)
    others = sorted((o for o in run.batch_sizes if o != m), key=lambda o: abs(math.log2(o / m)))
    for rank in range(share):  # the nearest batch sizes' best first, then their runners-up
        for other in others[:2]:
            ranked = run.ranked(other)
            if rank < len(ranked) and len(picks) < share:
                take(ranked[rank], f"neighbour:M={other}")
    observations = [(r["config"], r["us"]) for r in run.timed[m]]
    rid, suggested = run.memory.suggest(
        run.task(m), run.context, run.pool, observations, size, run.seed + round_no
    )
    quota = len(picks) + share
    for config, source, ids in suggested:
        if source != "search" and len(picks) < quota:
            take(config, f"memory:{source}", rid, ids)
    # Local search around the best so far: the nearest untimed configurations of the pool
    # (one-step moves in the full grid; the nearest recorded ones in a restricted pool).
    rng = random.Random(f"{run.seed}:{m}:{round_no}")
    for incumbent in run.ranked(m)[:2]:
        untimed = [c for c in run.pool if run.fresh(m, c)]
        rng.shuffle(untimed)
        untimed.sort(key=lambda c: grid_distance(c, incumbent))
        for config in untimed[: max(1, size - len(picks) + 1) if picks else size]:
            take(config, "local")
    return picks
