"""The cold drop-in replayed on a matmul no one here wrote: vLLM's fused-MoE kernel on the H200.

`bench.autotune.replay --cold` replays the drop-in on the project's own kernels. This is the
same protocol on the recorded H200 landscapes of vLLM's fused-MoE kernel
(`bench/results/moe/h200-landscape/`, written by `kernels.moe_sweep`): a kernel whose tiles,
warps and stages were chosen by others, keyed by the batch size M as vLLM's own tuner keys it.

- The given configurations are the same seeded `--configs` of the landscape's recorded 384-sample
  of vLLM's space for every key (what a user's `@triton.autotune(configs=...)` lists); one that
  failed on the H200 at a key is timed as a failure there, as Triton's benchmarking would.
- The keys are every (layer, M) of the chosen layers (`--cases`; development: the three layers
  the MoE tool was developed on, held out: `--cases heldout`), one kernel for the memory: the
  signature is (M, N, K, E, top-k, dtype), so layers and batch sizes are keys of one kernel.
- Per key order (`--orders`, seeds of a shuffle of the keys) one memory starts empty and one
  `MemoryTuning` tunes the keys in turn with `top_k` as its ceiling; each key's timings go back
  (outcomes and the trajectory of only what was timed) before the next. The first key finds
  nothing remembered and times everything, as Triton would; it is reported apart.
- Per key: the chosen configuration's speed against the best of the given configurations at that
  key (recorded median over chosen), the share timed, and random-k (the expected speed of as many
  configurations drawn at random, exact).

`python -m tunemem.bench.autotune.landscape_cold --orders 0 1 2 --out FILE.json` (defaults:
the development layers, 96 configurations, `top_k` 16). Timings are the recorded medians: the
search meets no timing noise.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tunemem.bench.autotune.replay import H200, by_seed, cold_summary
from tunemem.bench.autotune.report import summary_table
from tunemem.bench.common.arms import LIVE_SERVICE_SETTINGS
from tunemem.bench.common.paths import RESULTS
from tunemem.bench.common.results import memory_held, provenance, started_on, write_result
from tunemem.bench.moe.landscape import Case, load_case
from tunemem.kernels.moe_plan import CASES, HELD_OUT, SAMPLE_SEED, SAMPLE_SIZE
from tunemem.kernels.moe_space import config_key, sample_space

LANDSCAPE = RESULTS / "moe" / "h200-landscape"
DEVELOPMENT = tuple(c[0] for c in CASES if c[0] not in HELD_OUT)
OP = "fused_moe"


def given_configs(n: int, seed: int = 0) -> list[dict[str, int]]:
    """The user's configurations: a seeded n of the landscape's recorded 384-sample."""
    sample = sample_space(SAMPLE_SIZE, SAMPLE_SEED)
    return random.Random(seed).sample(sample, min(n, len(sample)))


class LandscapeKey:
    """One (layer, M) as the drop-in meets it: the given configurations and their timings."""

    def __init__(self, case: Case, m: int, configs: list[dict[str, int]]) -> None:
        import triton

        self.case, self.m = case, m
        self.shape = f"{case.name}/M={m}"
        self.dims = {
            "M": m,
            "N": case.n,
            "K": case.hidden,
            "E": case.experts,
            "topk": case.top_k,
            "dtype": case.dtype,
        }
        self.us = {config_key(c): case.us(m, c) for c in configs}
        self.given = [
            triton.Config(
                {k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                num_warps=c["num_warps"],
                num_stages=c["num_stages"],
            )
            for c in configs
        ]
        feasible = [us for us in self.us.values() if us is not None]
        if not feasible:
            raise ValueError(f"{self.shape}: none of the given configurations ran on the H200")
        self.best_ms = min(feasible) / 1000.0

    def ms(self, config: Any) -> float:
        us = self.us[
            config_key(
                {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
            )
        ]
        return float("inf") if us is None else us / 1000.0

    def bench(self, configs: list[Any]) -> dict[Any, list[float]]:
        """Triton's benchmarking, played back ([median, p20, p80]; inf for a failure)."""
        return {c: [self.ms(c)] * 3 for c in configs}

    def random_k(self, k: int) -> float:
        """Expected speed (best / chosen) of the best of k given configurations at random; a
        draw of only failures counts as speed 0."""
        from math import comb

        times = sorted(self.ms(c) for c in self.given)
        n, k = len(times), max(1, min(k, len(times)))
        return sum(
            comb(n - 1 - i, k - 1) / comb(n, k) * (self.best_ms / t if t < float("inf") else 0.0)
            for i, t in enumerate(times)
        )


def _tuning(url: str, top_k: int, seed: int, policy: Any) -> Any:
    from tunemem.agent_client.tuners.triton.autotune import MemoryTuning

    return MemoryTuning(
        url,
        top_k=top_k,
        explore=policy.explore,
        op=OP,
        kernel=OP,
        signature=lambda named: dict(named),
        context=H200,
        origin="replayed",  # the timings are the H200 landscape's, looked up on the CPU
        timeout_s=120.0,  # a suggest waits for the model trained on what was just reported
        seed=seed,
        policy=policy,
    )


def _row(tuning: Any, key: LandscapeKey, timed: list[Any], **extra: Any) -> dict[str, Any]:
    decision = tuning.last_decision or {}
    times = [key.ms(c) for c in timed]
    chosen = min(range(len(timed)), key=lambda i: times[i])
    return {
        **extra,
        "task": OP,
        "shape": key.shape,
        "m": key.m,
        "given": len(key.given),
        "timed": len(timed),
        "how": decision.get("how"),
        "rounds": decision.get("rounds"),
        "confidence": decision.get("confidence"),
        "stopped": decision.get("stopped"),
        "speed": key.best_ms / times[chosen],
        "random_k": key.random_k(len(timed)),
    }


def cold_order(
    keys: list[LandscapeKey], order: int, top_k: int, policy: Any, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """One key order from an empty memory (module docstring)."""
    from tunemem.bench.common.memory_server import LiveService

    keys = sorted(keys, key=lambda k: k.shape)
    random.Random(order).shuffle(keys)
    live = LiveService({**LIVE_SERVICE_SETTINGS, **settings})
    tuning = _tuning(live.url, top_k, order, policy)
    rows = []
    try:
        for position, key in enumerate(keys):
            timed = tuning.choose(list(key.given), dict(key.dims), ["M"], key.bench)
            tuning.report(tuning.pending, key.bench(timed))
            if not tuning.flush(120.0) or tuning.reports[-1]["error"]:
                error = tuning.reports[-1]["error"]
                raise RuntimeError(f"{key.shape}: the report did not reach the memory ({error})")
            rows.append(_row(tuning, key, timed, order=order, position=position))
    finally:
        tuning.client.close()
        live.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    from tunemem.agent_client.tuners.triton.rounds import RoundPolicy

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--landscape", type=Path, default=LANDSCAPE)
    p.add_argument(
        "--cases", default="development", help="comma-separated layers, or development / heldout"
    )
    p.add_argument("--configs", type=int, default=96, help="given configurations per key")
    p.add_argument("--top-k", type=int, default=16, help="the drop-in's ceiling")
    p.add_argument("--orders", type=int, nargs="+", default=[0, 1, 2], help="key orders: seeds")
    p.add_argument("--embedder", default="hashing")
    p.add_argument("--out", type=Path, help="the JSON result (its Markdown beside it)")
    args = p.parse_args(argv)
    started_on()  # the code version is the one this run starts on
    names = {"development": list(DEVELOPMENT), "heldout": list(HELD_OUT)}.get(
        args.cases, [c for c in args.cases.split(",") if c]
    )
    configs = given_configs(args.configs)
    keys = [
        LandscapeKey(case, m, configs)
        for case in (load_case(args.landscape, n) for n in names)
        for m in case.batch_sizes
    ]
    policy = RoundPolicy(explore=0.5)
    started = time.time()
    rows = [
        row
        for order in args.orders
        for row in cold_order(keys, order, args.top_k, policy, {"embedder": args.embedder})
    ]
    words = sys.argv[1:] if argv is None else argv
    command = shlex.join(["python", "-m", "tunemem.bench.autotune.landscape_cold", *words])
    result = {
        **provenance(command, seeds=list(args.orders), kind="replayed"),
        "protocol": "cold",
        "replayed": "replayed on the recorded H200 landscapes (no GPU); recorded medians",
        "memory_held": memory_held(
            "cold",
            "one memory per key order, fed only by the drop-in's own timings of the keys before",
        ),
        "cases": names,
        "configs": args.configs,
        "top_k": args.top_k,
        "orders": args.orders,
        "embedder": args.embedder,
        "policy": dict(policy.__dict__),
        "wall_s": round(time.time() - started, 1),
        "summary": cold_summary(rows),
        "by_seed": by_seed(rows, "order", cold_summary),
        "rows": rows,
    }
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        write_result(args.out.parent, args.out.stem, result, render(result), echo=False)
    return 0


def render(result: dict[str, Any]) -> str:
    """The result as Markdown: the summary per order and over all, then every key."""
    goal = "goal after the first key: mean >= 0.97 and >= 0.98 on >= 80 % of keys, every order"
    lines = [
        "# The cold drop-in on vLLM's fused-MoE kernel (H200 landscapes, replayed)",
        "",
        f"Replayed in {result['wall_s']} s on the CPU (no GPU).  ",
        f"Layers: {', '.join(result['cases'])}; {result['configs']} given configurations per "
        f"key, top_k {result['top_k']}; key orders (seeds of the shuffle) {result['orders']}; "
        f"{result['replayed']}.  ",
        f"Speed: the given configurations' best at the key over the chosen one's; {goal}. "
        "Each figure is the mean over all orders' keys, [lowest – highest] of the orders' own "
        "means after it.",
        "",
        *summary_table(result, "group"),
    ]
    lines += [
        "",
        "| order | # | key | timed | confidence per round | speed | random-k | stopped |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["rows"]:
        said = ", ".join("-" if c is None else f"{c:.2f}" for c in r["confidence"] or [])
        lines.append(
            f"| {r['order']} | {r['position']} | {r['shape']} | {r['timed']} / {r['given']} | "
            f"{said} | {r['speed']:.3f} | {r['random_k']:.3f} | {r['stopped']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
