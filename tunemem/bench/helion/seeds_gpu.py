"""Helion autotune alone, seeded by a memory, and memory first, side by side on one GPU (the
run behind bench/results/helion/; docs/helion.md).

Run on a GPU machine with Helion installed (no server, none of tunemem's service
dependencies: the memory is an in-process list per mode, and the package's pure modules
`ranking`, `trust` and `memory_first` are loaded by `gpu_support.pure_helion_modules`):

    python tunemem/bench/helion/seeds_gpu.py --kernels rms_norm,softmax --n-shapes 3 --out out/

For each kernel (Helion's example matmul, softmax, RMSNorm forward) the shapes run in a user's
order. Arms per shape, all in this one process:

  quick       Helion alone, autotune_effort="quick" (every mode's first shape: its memory
              is empty there, so the mode is Helion alone; not run twice)
  quick+mem   the same effort and random seed, `autotune_seed_configs` from its memory
  mem-first   `memory_first.memory_first_autotune` over its memory: the memory's candidates
              timed by Helion's FiniteSearch when `trust.judge` trusts them, else Helion's
              search seeded like quick+mem (when both memories give the same seeds, that is
              the quick+mem arm's own call, recorded as such and not run twice)
  full        autotune_effort="full", budget-capped (optional, --full-shapes)

Each mode's memory holds what a user of that mode alone would have timed: the first shape's
Helion search, then every configuration its own arm timed on later shapes. The chosen kernels
are re-timed interleaved (do_bench medians over rounds). $OUT/results.json is written after
every arm; $OUT/logs.tar.gz (every arm's HELION_AUTOTUNE_LOG) after every shape.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("HELION_SKIP_CACHE", "1")
os.environ.setdefault("HELION_AUTOTUNE_PROGRESS_BAR", "0")
os.environ["HELION_AUTOTUNE_LOG_DETAILS"] = "1"

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gpu_kernels  # noqa: E402
import gpu_support  # noqa: E402

PURE = gpu_support.pure_helion_modules(HERE.parents[1])
ranking, trust_mod, memory_first = PURE["ranking"], PURE["trust"], PURE["memory_first"]

import helion  # noqa: E402
import torch  # noqa: E402

MODES = ("quick+mem", "mem-first")


def as_timings(pairs, kernel, shape, device):
    return [ranking.Timing(kernel, tuple(shape), device, cfg, ms) for cfg, ms in pairs]


def seed_keys(seeds):
    return [ranking.config_key(s.config) for s in seeds]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="rms_norm,softmax,matmul")
    ap.add_argument("--shapes", default="", help="JSON {kernel: [[...], ...]} overriding defaults")
    ap.add_argument("--n-shapes", type=int, default=3)
    ap.add_argument("--effort", default="quick")
    ap.add_argument("--k-seeds", type=int, default=4)
    ap.add_argument("--k-candidates", type=int, default=8)
    ap.add_argument("--full-shapes", default="", help="kernel:index,... for the full-effort arm")
    ap.add_argument("--full-budget-s", type=int, default=240)
    ap.add_argument("--random-seed", type=int, default=1234)
    ap.add_argument("--deadline-s", type=float, default=540.0)
    ap.add_argument("--bench-rounds", type=int, default=5)
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    return ap.parse_args()


def main() -> int:  # noqa: C901  (one linear run: kernels, shapes, arms)
    a = parse_args()
    t_start = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    logdir = Path(tempfile.mkdtemp(prefix="helion-logs-"))
    import triton

    device_name = torch.cuda.get_device_name()
    kernels = gpu_kernels._kernels()
    shapes: dict[str, Any] = dict(gpu_kernels.DEFAULT_SHAPES)
    if a.shapes:
        shapes.update({k: [tuple(s) for s in v] for k, v in json.loads(a.shapes).items()})
    full_set = {(k, int(i)) for k, i in (x.split(":") for x in a.full_shapes.split(",") if x)}
    policy = trust_mod.TrustPolicy()
    result: dict[str, Any] = {
        "what": "Helion autotune: alone, seeded by a memory, and memory first",
        "command": " ".join(sys.argv),
        "device": device_name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "helion": getattr(helion, "__version__", "?"),
        "env": {k: v for k, v in os.environ.items() if k.startswith("HELION_")},
        "args": vars(a),
        "trust_policy": vars(policy),
        "memory_policy": (
            "one memory per mode, empty per kernel; the first shape's Helion search, then "
            "every configuration that mode's own arm timed"
        ),
        "shapes": [],
    }

    def save() -> None:
        (out / "results.json").write_text(json.dumps(result, indent=1, default=str))

    def left() -> float:
        return a.deadline_s - (time.perf_counter() - t_start)

    walls: list[float] = []
    for kname in filter(None, a.kernels.split(",")):
        fn, make, extra = kernels[kname]
        memory: dict[str, list[Any]] = {mode: [] for mode in MODES}
        for si, shape in enumerate(shapes[kname][: a.n_shapes]):
            if left() < 2.5 * max(walls or [30.0]):
                result.setdefault("skipped", []).append(f"{kname} {shape}: deadline")
                continue
            torch.manual_seed(0)
            args, ref = make(shape, "cuda")
            expected = ref()
            key = tuple(int(d) for t in args if hasattr(t, "shape") for d in t.shape)
            rec: dict[str, Any] = {"kernel": kname, "shape_index": si, "shape": list(shape)}
            rec["key_shape"] = list(key)
            rec["memory_before"] = {
                mode: {
                    "timings": len(held),
                    "shapes": sorted({t.shape for t in held}),
                    "configs": len({ranking.config_key(t.config) for t in held}),
                }
                for mode, held in memory.items()
            }
            rec["arms"] = {}
            result["shapes"].append(rec)
            seeds = ranking.rank_seeds(
                memory["quick+mem"], kernel=kname, shape=key, device=device_name, k=a.k_seeds
            )
            plan = memory_first.plan_memory_first(
                memory["mem-first"],
                kernel_name=kname,
                shape=key,
                device=device_name,
                k=a.k_candidates,
                seed_k=a.k_seeds,
                policy=policy,
            )
            verdict, mf_seeds = plan.trust, plan.seeds
            rec["seeds"] = [
                {"config": s.config, "score": round(s.score, 4), "reason": s.reason} for s in seeds
            ]
            rec["mem_first_decision"] = {
                **vars(verdict),
                "same_seeds_as_quick_mem": (seed_keys(mf_seeds) == seed_keys(seeds)),
            }
            arms = ["quick"]
            if si > 0:
                arms.append("quick+mem")
                if verdict.trusted or seed_keys(mf_seeds) != seed_keys(seeds):
                    arms.append("mem-first")
            if (kname, si) in full_set:
                arms.append("full")
            # In-process compile caches favour arms that run later on a shape: rotate the order.
            arms = arms[si % len(arms) :] + arms[: si % len(arms)]
            rec["arm_order"] = arms
            done: dict[str, Any] = {}
            for arm in arms:
                if left() < 1.3 * max(walls or [60.0]):
                    rec["arms"][arm] = {"skipped": "deadline"}
                    continue
                base = logdir / f"{kname}_{si}_{arm.replace('+', '_').replace('-', '_')}"
                settings = dict(extra)
                settings.update(
                    autotune_effort="full" if arm == "full" else a.effort,
                    autotune_log=str(base),
                    autotune_log_details=True,
                    autotune_random_seed=a.random_seed,
                    autotune_progress_bar=False,
                )
                if arm == "quick+mem":
                    settings["autotune_seed_configs"] = [helion.Config(**s.config) for s in seeds]
                if arm == "full":
                    settings["autotune_budget_seconds"] = int(min(a.full_budget_s, left() - 60))
                os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")
                arm_rec: dict[str, Any] = {"effort": settings["autotune_effort"]}
                rec["arms"][arm] = arm_rec
                try:
                    kern = helion.kernel(fn, **settings)
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    if arm == "mem-first":
                        outcome = memory_first.memory_first_autotune(
                            kern,
                            args,
                            memory["mem-first"],
                            kernel_name=kname,
                            shape=key,
                            device=device_name,
                            k=a.k_candidates,
                            seed_k=a.k_seeds,
                            policy=policy,
                        )
                        cfg = outcome.config
                    else:
                        cfg = dict(kern.autotune(args, force=True).config)
                    torch.cuda.synchronize()
                    arm_rec["autotune_wall_s"] = time.perf_counter() - t0
                    walls.append(arm_rec["autotune_wall_s"])
                    arm_rec["chosen_config"] = cfg
                    got = kern(*args)
                    arm_rec["max_abs_err"] = float((got.float() - expected.float()).abs().max())
                    rows = gpu_support.read_helion_log(base)
                    arm_rec["log_rows"] = len(rows)
                    timed = gpu_support.ok_timings(rows)
                    if arm == "mem-first":
                        arm_rec["mode"] = outcome.mode
                        arm_rec["fell_back"] = outcome.fell_back
                        arm_rec["candidates"] = [
                            {"config": c.config, "score": round(c.score, 4), "reason": c.reason}
                            for c in outcome.candidates
                        ]
                        arm_rec["timed"] = [vars(t) for t in outcome.timed]
                        if outcome.mode == "memory":
                            timed = [(t.config, t.time_ms) for t in outcome.timed if t.time_ms]
                    arm_rec["configs_timed_ok"] = len(timed)
                    arm_rec["search_best_ms"] = min((ms for _, ms in timed), default=None)
                    if arm in MODES:
                        memory[arm].extend(as_timings(timed, kname, key, device_name))
                    if arm == "quick" and si == 0:
                        for mode in MODES:
                            memory[mode].extend(as_timings(timed, kname, key, device_name))
                    done[arm] = kern
                except Exception as exc:  # record and go on: one arm's failure is a result
                    arm_rec["error"] = f"{type(exc).__name__}: {str(exc)[:800]}"
                    arm_rec["traceback"] = traceback.format_exc()[-3000:]
                print(
                    kname,
                    shape,
                    arm,
                    {
                        k: v
                        for k, v in arm_rec.items()
                        if k not in ("traceback", "candidates", "timed")
                    },
                    flush=True,
                )
                save()
            if si > 0 and "mem-first" not in arms and "quick+mem" in done:
                # Not trusted and the same seeds: memory first is the quick+mem call itself.
                rec["arms"]["mem-first"] = {"same_call_as": "quick+mem", "mode": "search"}
                memory["mem-first"].extend(t for t in memory["quick+mem"] if tuple(t.shape) == key)
            if done:
                fns = {arm: (lambda kk=kern, aa=args: kk(*aa)) for arm, kern in done.items()}
                fns["torch"] = ref
                try:
                    rec["kernel_time"] = gpu_support.bench_ms(fns, rounds=a.bench_rounds)
                except Exception as exc:
                    rec["kernel_time_error"] = f"{type(exc).__name__}: {exc}"
            save()
            with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
                tar.add(logdir, arcname="helion_logs")
    result["elapsed_s"] = time.perf_counter() - t_start
    save()
    print("done", result["elapsed_s"], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
