"""The drop-in's choices replayed on recorded sweeps, on the CPU: how top_k and explore trade.

For each task and each recorded shape held out in turn, a fresh memory ingests the recorded
H200 sweeps of the task's other shapes; the drop-in's own `MemoryTuning.choose` picks which of
the shape's configurations (the tuning space pruned by the task's check) it would time, and the
held-out shape's own recorded sweep says how fast the best of those is against the sweep's best.
This is the development data for choosing `top_k` (bench autotune on the GPU measures afresh).
`python -m bench.autotune.replay --top-k 3 4 5 6 --out FILE.json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common.arms import LIVE_SERVICE_SETTINGS
from bench.live.memories import load_sweeps


def replay_task(
    name: str,
    sweeps_dir: Path,
    budgets: list[float],
    explore: float,
    options: dict[str, Any] | None = None,
) -> list[dict]:
    from agent_client.tuners.triton_autotune import MemoryTuning
    from bench.autotune.launchers import config_dict, triton_configs
    from bench.common.memory_server import LiveService
    from kernels.catalogue import get_task

    task = get_task(name)
    sweeps = load_sweeps(sweeps_dir, name)
    rows = []
    for shape, record in sweeps.items():
        dims = task.shape(shape).dims
        measured = {
            json.dumps(a.params, sort_keys=True): a.metrics.get("latency_median_ms", a.latency_ms)
            for a in record.attempts
            if a.feasible and a.latency_ms
        }
        given = [
            c
            for c in triton_configs(task)
            if json.dumps(config_dict(task, c), sort_keys=True) in measured
        ]
        best = min(measured.values())
        live = LiveService(LIVE_SERVICE_SETTINGS)
        try:
            live.service.ingest([r for s, r in sweeps.items() if s != shape])
            for top_k in budgets:
                tuning = MemoryTuning(
                    live.url,
                    top_k=int(top_k) if top_k >= 1 else top_k,
                    explore=explore,
                    op=task.op,
                    kernel=task.kernel,
                    signature=_fixed_signature({**dims, "dtype": task.default_dtype}),
                    context={"chip": "NVIDIA H200", "backend": "cuda"},
                    options=options,
                )
                timed = tuning.choose(list(given), dict(dims), list(dims))
                times = [measured[json.dumps(config_dict(task, c), sort_keys=True)] for c in timed]
                rows.append(
                    {
                        "task": name,
                        "shape": shape,
                        "top_k": top_k,
                        "given": len(given),
                        "timed": len(timed),
                        "how": (tuning.last_decision or {}).get("how"),
                        "speed": best / min(times),
                    }
                )
                tuning.client.close()
        finally:
            live.close()
    return rows


def _fixed_signature(signature: dict[str, Any]) -> Any:
    def of(named: dict[str, Any]) -> dict[str, Any]:
        return dict(signature)

    return of


def summary(rows: list[dict], goal: float = 0.98) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for top_k in sorted({r["top_k"] for r in rows}):
        mine = [r for r in rows if r["top_k"] == top_k]
        out[str(top_k)] = {
            "shapes": len(mine),
            "share_speed_within_goal": sum(r["speed"] >= goal for r in mine) / len(mine),
            "speed_mean": statistics.fmean(r["speed"] for r in mine),
            "speed_min": min(r["speed"] for r in mine),
            "timed_share": sum(r["timed"] for r in mine) / sum(r["given"] for r in mine),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="softmax,rmsnorm,decode_attention,attention,gemm")
    p.add_argument("--sweeps", type=Path, default=Path("bench/results/h200"))
    p.add_argument("--top-k", type=float, nargs="+", default=[3, 4, 5, 6])
    p.add_argument("--explore", type=float, default=0.2)
    p.add_argument("--options", type=json.loads, default=None, help="ranking options (JSON)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    rows = [
        row
        for name in args.tasks.split(",")
        for row in replay_task(name, args.sweeps, args.top_k, args.explore, args.options)
    ]
    result = {
        "command": "python -m bench.autotune.replay " + " ".join(sys.argv[1:]),
        "explore": args.explore,
        "options": args.options,
        "summary": summary(rows),
        "rows": rows,
    }
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
