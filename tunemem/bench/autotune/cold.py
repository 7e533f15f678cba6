"""`tunemem bench autotune --cold`: the drop-in from an empty memory, on the GPU.

For each kernel and each key order (`--orders`, seeds of a shuffle of the kernel's shapes), a
fresh memory starts empty; one process (empty Triton cache) tunes the kernel's shapes in that
order with the drop-in, each shape's timings going back to the memory (outcomes and trajectory,
only what was timed) before the next. The first shape finds nothing remembered and is Triton's
full autotune. Then each shape's chosen configuration is re-timed interleaved against the best
configuration of the shape's recorded full sweep (`--sweeps`), and random-k at the same number
of timings is computed from that sweep. `bench.autotune.replay --cold` is the same protocol
replayed on the recorded sweeps on the CPU; this is its check on the GPU.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from tunemem.bench.autotune.replay import RecordedKey, cold_summary
from tunemem.bench.autotune.run import AutotuneBench, _top_k
from tunemem.bench.live.memories import MemoryPool, MemorySpec, load_sweeps


class ColdAutotuneBench(AutotuneBench):
    """One run of the cold protocol (the shared parts are `AutotuneBench`'s)."""

    def order_of(self, task: Any, order: int) -> list[str]:
        shapes = sorted(case.name for case in self.shapes(task))
        random.Random(order).shuffle(shapes)
        return shapes

    def run(self) -> dict[str, Any]:
        from tunemem.kernels.catalogue import get_task

        names = [n for n in self.args.tasks.split(",") if n]
        specs = [
            MemorySpec(f"{name}/cold-{order}", (), seed=self.args.seed)
            for name in names
            for order in self.args.orders
        ]
        pool = MemoryPool(specs, workers=self.args.workers)
        deadline = self.started + self.args.budget_s
        try:
            for name in names:
                for order in self.args.orders:
                    key = f"{name}/cold-{order}"
                    if time_left(deadline) <= 0:
                        self.notes.append(f"{name} order {order}: not run (time budget spent)")
                        pool.skip([key])
                        continue
                    self.run_order(get_task(name), order, pool, key, deadline)
                    self.write_cold()
        finally:
            pool.close()
            self.tmp.cleanup()
        return self.write_cold()

    def run_order(self, task: Any, order: int, pool: MemoryPool, key: str, deadline: float) -> None:
        import time

        shapes = self.order_of(task, order)
        ready = pool.acquire(key)
        if "error" in ready:
            raise RuntimeError(f"memory for {key}: {ready['error']}")
        self.log(f"{task.name} order {order}: the drop-in from an empty memory on {shapes}")
        common = {"task": task.name, "seed": order, "deadline": time.time() + time_left(deadline)}
        try:
            memory = self.subprocess(
                {
                    **common,
                    "arm": "memory",
                    "shapes": [{"shape": s, "url": ready["url"]} for s in shapes],
                    "top_k": _top_k(self.args.top_k),
                    "explore": self.args.explore,
                    "options": self.args.options,
                },
                f"{task.name}-cold-{order}",
            )
        finally:
            pool.release(key)
        sweeps = load_sweeps(self.args.sweeps, task.name)
        recorded = {
            e["shape"]: RecordedKey(task, e["shape"], sweeps[e["shape"]])
            for e in memory["shapes"]
            if e["shape"] in sweeps
        }
        chosen = [
            {
                "shape": e["shape"],
                "configs": {"best": recorded[e["shape"]].best_config, "memory": e["chosen"]},
            }
            for e in memory["shapes"]
            if e["shape"] in recorded
        ]
        self.log(f"{task.name} order {order}: interleaved re-timing against the sweeps' best")
        retimed = {
            r["shape"]: r["retimed_ms"]
            for r in self.subprocess(
                {**common, "arm": "retime", "rounds": self.args.rounds, "shapes": chosen},
                f"{task.name}-cold-{order}-retime",
            )["retime"]
        }
        for position, entry in enumerate(memory["shapes"]):
            self.results.append(cold_row(entry, order, position, recorded, retimed))
        self.trajectories.setdefault(task.name, []).extend(
            t for e in memory["shapes"] for t in e.get("trajectories") or []
        )

    def write_cold(self) -> dict[str, Any]:
        from tunemem.bench.common.results import memory_held

        held = memory_held(
            "cold",
            "one memory per kernel and key order, fed only by the drop-in's own timings of the "
            "keys before",
        )
        scored = [r for r in self.results if r.get("speed") is not None]
        report = {
            **self.report_head("autotune-cold", held, list(self.args.orders)),
            "orders": self.args.orders,
            "summary": cold_summary(scored) if scored else {},
            "shapes": self.results,
        }
        return self.save(report, render_cold(report))


def time_left(deadline: float) -> float:
    import time

    return deadline - time.monotonic()


def cold_row(
    entry: dict[str, Any],
    order: int,
    position: int,
    recorded: dict[str, RecordedKey],
    retimed: dict[str, dict[str, list[float]]],
) -> dict[str, Any]:
    """One key of the cold run: what was timed, and the re-timed speed against the sweep's best."""
    decision = entry.get("decision") or {}
    runs = retimed.get(entry["shape"])
    speed = None
    if runs:
        speed = statistics.median(runs["best"]) / statistics.median(runs["memory"])
    key = recorded.get(entry["shape"])
    return {
        "task": entry["task"],
        "shape": entry["shape"],
        "order": order,
        "position": position,
        "given": decision.get("given", entry["timed"]),
        "timed": entry["timed"],
        "wall_s": entry["wall_s"],
        "bench_s": entry.get("bench_s"),
        "how": decision.get("how"),
        "rounds": decision.get("rounds"),
        "stopped": decision.get("stopped"),
        "chosen": entry["chosen"],
        "recorded_best": key.best_config if key else None,
        "retimed_ms": runs,
        "speed": speed,
        "random_k": key.random_k(entry["timed"]) if key else None,
        "reported": entry.get("reported"),
    }


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_cold(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Autotune benchmark, cold: the drop-in from an empty memory",
        "",
        f"Machine: {m.get('gpu')}, torch {m.get('torch')}, triton {m.get('triton')}.  ",
        f"Run {report['run_id']} ({report['date']}): `{report['command']}`.  ",
        f"Drop-in: top_k = {report['top_k']} (its ceiling), key orders {report['orders']}; the "
        "memory starts empty and holds only what the drop-in timed and reported.  ",
        f"Speed: the recorded sweep's best configuration's time over the drop-in's choice's, "
        f"re-timed interleaved ({report['rounds']} rounds of do_bench, median); random-k: the "
        "expected speed of as many configurations drawn at random, from the recorded sweep.",
        "",
        "| group | keys | speed mean / min | >= 0.98 | timed share | random-k mean |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for group, s in report["summary"].items():
        lines.append(
            f"| {group} | {s['keys']} | {_f(s['speed_mean'])} / {_f(s['speed_min'])} | "
            f"{s['share_speed_within_goal']:.0%} | {s['timed_share']:.3f} | "
            f"{_f(s['random_k_mean'])} |"
        )
    lines += [
        "",
        "| kernel | order | # | shape | timed / given | rounds | speed | random-k | stopped |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["shapes"]:
        lines.append(
            f"| {r['task']} | {r['order']} | {r['position']} | {r['shape']} | "
            f"{r['timed']} / {r['given']} | {r['rounds']} | {_f(r['speed'])} | "
            f"{_f(r['random_k'])} | {r['stopped']} |"
        )
    if report.get("notes"):
        lines += ["", "Notes:", *[f"- {n}" for n in report["notes"]]]
    return "\n".join(lines) + "\n"
