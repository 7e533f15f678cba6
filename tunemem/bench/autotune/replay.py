"""The drop-in's search replayed on recorded sweeps, on the CPU: full-cache and cold memories.

The drop-in's own `MemoryTuning.choose` searches a key's configurations (the tuning space pruned
by the task's check) in rounds, and the key's recorded H200 sweep plays Triton's benchmarking:
each configuration it times gets its recorded median, and the sweep's best says how fast the
drop-in's choice is. Two protocols:

- full cache (default): each recorded shape held out in turn, a fresh memory ingests the
  recorded sweeps of the task's other shapes, once per exploration seed (`python -m
  tunemem.bench.autotune.replay --top-k 8 --seeds 0 1 2 --out FILE.json`);
- cold (`--cold`): one memory per kernel and key order starts empty; the kernel's shapes come in
  a seeded order (`--orders`), one `MemoryTuning` tunes them in turn as one process would, and
  each key's timings go back to the memory (its outcomes and its trajectory, only what was
  timed) before the next key. The first key finds nothing remembered and times everything, as
  Triton would. Beside each key's speed: the share timed, and the expected speed of timing the
  same number of configurations drawn at random (random-k, exact over all draws). The key
  order is the run's seed (`--orders`).
  `python -m tunemem.bench.autotune.replay --cold --top-k 0.2 --orders 0 1 2 --out FILE.json`.

`--out FILE.json` writes the result and its Markdown beside it (`write_result`), with the summary
of each seed (or order) apart, so a figure comes with its range over seeds.

Timings are the sweeps' single recorded medians, so the search meets no timing noise here.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from math import comb
from pathlib import Path
from typing import Any

from tunemem.bench.common.arms import LIVE_SERVICE_SETTINGS
from tunemem.bench.common.paths import SWEEPS
from tunemem.bench.common.results import memory_held, provenance, started_on, write_result
from tunemem.bench.live.memories import load_sweeps

H200 = {"chip": "NVIDIA H200", "backend": "cuda"}


class RecordedKey:
    """One recorded shape as the drop-in meets it: its configurations and Triton's timings."""

    def __init__(self, task: Any, shape: str, record: Any) -> None:
        from tunemem.bench.autotune.launchers import config_dict, triton_configs

        self.task, self.shape = task, shape
        self.dims = dict(task.shape(shape).dims)
        self.measured = {
            json.dumps(a.params, sort_keys=True): a.metrics.get("latency_median_ms", a.latency_ms)
            for a in record.attempts
            if a.feasible and a.latency_ms
        }
        self._key = lambda c: json.dumps(config_dict(task, c), sort_keys=True)
        self.given = [c for c in triton_configs(task) if self._key(c) in self.measured]
        self.best_ms = min(self.measured.values())
        self.best_config = json.loads(min(self.measured, key=lambda c: self.measured[c]))

    def ms(self, config: Any) -> float:
        return float(self.measured[self._key(config)])

    def bench(self, configs: list[Any]) -> dict[Any, list[float]]:
        """Triton's benchmarking, played back: [median, p20, p80] as the recorded median."""
        return {c: [self.ms(c)] * 3 for c in configs}

    def random_k(self, k: int) -> float:
        """Expected speed (best / chosen) of the best of k configurations drawn at random."""
        times = sorted(self.ms(c) for c in self.given)
        n = len(times)
        k = max(1, min(k, n))
        return sum(
            comb(n - 1 - i, k - 1) / comb(n, k) * self.best_ms / t for i, t in enumerate(times)
        )


def _tuning(url: str, task: Any, top_k: float, explore: float, **kwargs: Any) -> Any:
    from tunemem.agent_client.tuners.triton.autotune import MemoryTuning

    dtype = task.default_dtype
    return MemoryTuning(
        url,
        top_k=int(top_k) if top_k >= 1 else top_k,
        explore=explore,
        op=task.op,
        kernel=task.kernel,
        signature=lambda named: {**named, "dtype": dtype},
        context=H200,
        origin="replayed",  # the timings are the H200 sweep's, looked up on the CPU
        timeout_s=120.0,  # a suggest waits for the model trained on what was just reported
        **kwargs,
    )


def _row(tuning: Any, key: RecordedKey, timed: list[Any], **extra: Any) -> dict[str, Any]:
    decision = tuning.last_decision or {}
    times = [key.ms(c) for c in timed]
    chosen = min(range(len(timed)), key=lambda i: times[i])
    origins = decision.get("origins") or []
    return {
        **extra,
        "task": key.task.name,
        "shape": key.shape,
        "given": len(key.given),
        "timed": len(timed),
        "how": decision.get("how"),
        "rounds": decision.get("rounds"),
        "stopped": decision.get("stopped"),
        "chosen_from": origins[chosen] if chosen < len(origins) else None,
        "speed": key.best_ms / times[chosen],
        "random_k": key.random_k(len(timed)),
    }


def replay_task(
    name: str,
    sweeps_dir: Path,
    budgets: list[float],
    explore: float,
    options: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    policy: Any = None,
    seeds: tuple[int, ...] = (0,),
) -> list[dict]:
    """Full cache: each shape held out, with a memory of the task's other shapes' sweeps, and
    the drop-in run once per exploration seed."""
    from tunemem.bench.common.memory_server import LiveService
    from tunemem.kernels.catalogue import get_task

    task = get_task(name)
    sweeps = load_sweeps(sweeps_dir, name)
    rows = []
    for shape, record in sweeps.items():
        key = RecordedKey(task, shape, record)
        live = LiveService({**LIVE_SERVICE_SETTINGS, **(settings or {})})
        try:
            live.service.ingest([r for s, r in sweeps.items() if s != shape])
            for top_k in budgets:
                for seed in seeds:
                    tuning = _tuning(
                        live.url, task, top_k, explore, options=options, policy=policy, seed=seed
                    )
                    timed = tuning.choose(
                        list(key.given), dict(key.dims), list(key.dims), key.bench
                    )
                    rows.append(_row(tuning, key, timed, top_k=top_k, seed=seed))
                    tuning.client.close()
        finally:
            live.close()
    return rows


def cold_task(
    name: str,
    sweeps_dir: Path,
    top_k: float,
    explore: float,
    orders: list[int],
    options: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    policy: Any = None,
) -> list[dict]:
    """Cold: per key order, a memory that starts empty and holds only what the drop-in timed."""
    from tunemem.bench.common.memory_server import LiveService
    from tunemem.kernels.catalogue import get_task

    task = get_task(name)
    sweeps = load_sweeps(sweeps_dir, name)
    rows = []
    for order in orders:
        shapes = sorted(sweeps)
        random.Random(order).shuffle(shapes)
        live = LiveService({**LIVE_SERVICE_SETTINGS, **(settings or {})})
        tuning = _tuning(live.url, task, top_k, explore, options=options, seed=order, policy=policy)
        try:
            for position, shape in enumerate(shapes):
                key = RecordedKey(task, shape, sweeps[shape])
                timed = tuning.choose(list(key.given), dict(key.dims), list(key.dims), key.bench)
                pending = tuning.pending
                tuning.report(pending, key.bench(timed))
                if not tuning.flush(120.0) or tuning.reports[-1]["error"]:
                    error = tuning.reports[-1]["error"]
                    raise RuntimeError(
                        f"{name} {shape}: the report did not reach the memory ({error})"
                    )
                rows.append(_row(tuning, key, timed, order=order, position=position))
        finally:
            tuning.client.close()
            live.close()
    return rows


def _group(rows: list[dict], goal: float) -> dict[str, Any]:
    return {
        "keys": len(rows),
        "speed_mean": statistics.fmean(r["speed"] for r in rows),
        "speed_min": min(r["speed"] for r in rows),
        "share_speed_within_goal": sum(r["speed"] >= goal for r in rows) / len(rows),
        "timed_share": sum(r["timed"] for r in rows) / sum(r["given"] for r in rows),
        "timed_share_max": max(r["timed"] / r["given"] for r in rows),
        "random_k_mean": statistics.fmean(r["random_k"] for r in rows),
        "ahead_of_random_k": statistics.fmean(r["speed"] - r["random_k"] for r in rows),
    }


def by_seed(rows: list[dict], field: str, summarise: Any) -> dict[str, Any]:
    """The summary of each seed's (or key order's) rows apart, and per figure its range."""
    seeds = sorted({r[field] for r in rows})
    each = {str(s): summarise([r for r in rows if r[field] == s]) for s in seeds}
    ranges: dict[str, Any] = {}
    for group in next(iter(each.values()), {}):
        if all(group in e for e in each.values()):
            ranges[group] = {
                figure: [
                    min(e[group][figure] for e in each.values()),
                    max(e[group][figure] for e in each.values()),
                ]
                for figure in each[str(seeds[0])][group]
            }
    return {"seeds": seeds, "each": each, "range": ranges}


def summary(rows: list[dict], goal: float = 0.98) -> dict[str, Any]:
    """Full cache: per top_k over all held-out shapes."""
    out: dict[str, Any] = {}
    for top_k in sorted({r["top_k"] for r in rows}):
        out[str(top_k)] = _group([r for r in rows if r["top_k"] == top_k], goal)
    return out


def cold_summary(rows: list[dict], goal: float = 0.98) -> dict[str, Any]:
    """Cold: the first keys apart; after them per kernel, per order and over all."""
    later = [r for r in rows if r["position"] > 0]
    out: dict[str, Any] = {"first_keys": _group([r for r in rows if r["position"] == 0], goal)}
    for name in dict.fromkeys(r["task"] for r in later):
        out[name] = _group([r for r in later if r["task"] == name], goal)
    for order in sorted({r["order"] for r in later}):
        out[f"order {order}"] = _group([r for r in later if r["order"] == order], goal)
    if later:
        out["all"] = _group(later, goal)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="softmax,rmsnorm,decode_attention,attention,gemm")
    p.add_argument("--sweeps", type=Path, default=SWEEPS)
    p.add_argument("--top-k", type=float, nargs="+", default=[3, 4, 5, 6])
    p.add_argument("--explore", type=float, default=0.5, help="the drop-in's explore")
    p.add_argument("--options", type=json.loads, default=None, help="ranking options (JSON)")
    p.add_argument("--cold", action="store_true", help="the cold protocol (see the module)")
    p.add_argument("--orders", type=int, nargs="+", default=[0, 1, 2], help="cold key orders")
    p.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="full cache: exploration seeds"
    )
    p.add_argument("--embedder", default="hashing", help="the memory's embedder")
    p.add_argument("--opening", type=float, help="the rounds' opening share (RoundPolicy)")
    p.add_argument("--step", type=float, help="the rounds' later share (RoundPolicy)")
    p.add_argument("--min-gain", type=float, help="the rounds' stopping gain (RoundPolicy)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    started_on()  # the code version is the one this run starts on
    settings = {"embedder": args.embedder}
    from tunemem.agent_client.tuners.triton.rounds import RoundPolicy

    chosen = {"opening": args.opening, "step": args.step, "min_gain": args.min_gain}
    policy = RoundPolicy(**{k: v for k, v in chosen.items() if v is not None})
    policy = RoundPolicy(policy.opening, policy.step, policy.min_gain, args.explore, policy.sure)
    tasks = [t for t in args.tasks.split(",") if t]
    if args.cold:
        if len(args.top_k) != 1:
            p.error("--cold takes one --top-k")
        rows = [
            row
            for name in tasks
            for row in cold_task(
                name,
                args.sweeps,
                args.top_k[0],
                args.explore,
                args.orders,
                args.options,
                settings,
                policy,
            )
        ]
        found = cold_summary(rows)
    else:
        rows = [
            row
            for name in tasks
            for row in replay_task(
                name,
                args.sweeps,
                args.top_k,
                args.explore,
                args.options,
                settings,
                policy,
                tuple(args.seeds),
            )
        ]
        found = summary(rows)
    words = sys.argv[1:] if argv is None else argv
    seeds = args.orders if args.cold else args.seeds
    result = {
        **provenance(
            "python -m tunemem.bench.autotune.replay " + " ".join(words), seeds, "replayed"
        ),
        "protocol": "cold" if args.cold else "full-cache",
        "memory_held": memory_held(
            "cold",
            "one memory per kernel and key order, fed only by the drop-in's own timings of the "
            "keys before",
        )
        if args.cold
        else memory_held(
            "complete",
            "a fresh memory per held-out shape, holding the recorded sweeps of the task's "
            "other shapes and nothing of the held-out one",
        ),
        "top_k": args.top_k,
        "explore": args.explore,
        "options": args.options,
        "embedder": args.embedder,
        "policy": dict(policy.__dict__),
        "summary": found,
        "by_seed": by_seed(
            rows, "order" if args.cold else "seed", cold_summary if args.cold else summary
        ),
        "rows": rows,
    }
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        from tunemem.bench.autotune.report import replay_markdown

        write_result(args.out.parent, args.out.stem, result, replay_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
