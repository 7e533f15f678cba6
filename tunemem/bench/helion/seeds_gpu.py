"""Helion autotune with and without a memory's seeds, side by side on one GPU (the run behind
bench/results/helion/; docs/helion.md).

Run on a GPU machine with Helion installed (no server, no tunemem dependencies: the memory is
an in-process list and the ranking is `tunemem.agent_client.tuners.helion.ranking`, loaded by
path):

    python tunemem/bench/helion/seeds_gpu.py --kernels rms_norm,matmul --n-shapes 3 --g1 \
        --k-seeds 4 --out out/

For each kernel (Helion's example matmul, softmax, RMSNorm forward), shapes run
in the user's order; the memory starts empty and, after every shape, takes
every configuration that any arm timed on that shape (from Helion's own
HELION_AUTOTUNE_LOG files). Arms per shape, all in this one process:

  quick       Helion alone, autotune_effort="quick"
  quick+mem   the same effort and random seed, autotune_seed_configs from the
              memory (seedrank.rank_seeds: nearest shape first); skipped on a
              kernel's first shape (memory empty)
  quick+mem/g1  the same, autotune_max_generations=1 (optional)
  full        autotune_effort="full", budget-capped (optional, a subset)

Each arm's chosen kernel is timed afterwards, interleaved with the other arms'
(triton.testing.do_bench medians over several rounds). Results go to
$OUT/results.json after every arm, the logs to $OUT/logs.tar.gz at the end.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
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


def _load(path: Path, name: str):
    """A module of the package loaded by path: on a GPU machine the script runs with Helion
    and torch but without tunemem's own dependencies (httpx, pydantic)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


HERE = Path(__file__).resolve().parent
seedrank = _load(HERE.parents[1] / "agent_client" / "tuners" / "helion" / "ranking.py", "seedrank")
gpu_kernels = _load(HERE / "gpu_kernels.py", "helion_gpu_kernels")
_kernels, DEFAULT_SHAPES = gpu_kernels._kernels, gpu_kernels.DEFAULT_SHAPES

import helion  # noqa: E402
import torch  # noqa: E402

# ---------------------------------------------------------------- log parsing


def read_helion_log(base: Path) -> list[dict]:
    """Rows of one arm's HELION_AUTOTUNE_LOG (CSV joined to .meta.jsonl configs)."""
    csv_path = base.with_suffix(".csv")
    meta_path = base.with_suffix(".meta.jsonl")
    configs: dict[str, dict] = {}
    meta_info: dict[str, dict] = {}
    if meta_path.exists():
        for line in meta_path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                configs.update(rec.get("configs") or {})
                meta_info[rec.get("run_id", "")] = {
                    "hardware": rec.get("hardware"),
                    "input_shapes": rec.get("input_shapes"),
                    "kernel_name": rec.get("kernel_name"),
                }
    rows = []
    if csv_path.exists():
        with csv_path.open(newline="") as f:
            for row in csv.DictReader(f):
                row["config_dict"] = configs.get(row.get("config_id", ""))
                rows.append(row)
    return rows


def timings_from_rows(rows, kernel, shape, device):
    out = []
    for row in rows:
        if row.get("status") != "ok" or not row.get("perf_ms") or row.get("config_dict") is None:
            continue
        out.append(
            seedrank.Timing(kernel, tuple(shape), device, row["config_dict"], float(row["perf_ms"]))
        )
    return out


# ---------------------------------------------------------------- timing


def bench_ms(fn, rounds_fns, rounds=5):
    """Median of per-round do_bench medians (ms) per arm, interleaved."""
    from triton.testing import do_bench

    samples: dict[str, list[float]] = {name: [] for name in rounds_fns}
    for _ in range(rounds):
        for name, f in rounds_fns.items():
            samples[name].append(float(do_bench(f, warmup=25, rep=100, return_mode="median")))
    return {
        name: {
            "median_ms": statistics.median(v),
            "min_ms": min(v),
            "max_ms": max(v),
            "spread_pct": 100.0 * (max(v) - min(v)) / statistics.median(v),
            "rounds": v,
        }
        for name, v in samples.items()
    }


# ---------------------------------------------------------------- main


def main() -> int:  # noqa: C901  (one linear run: kernels, shapes, arms)
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="matmul,softmax,rms_norm")
    ap.add_argument("--shapes", default="", help="JSON {kernel: [[...], ...]} overriding defaults")
    ap.add_argument("--n-shapes", type=int, default=3)
    ap.add_argument("--effort", default="quick")
    ap.add_argument("--max-generations", type=int, default=None)
    ap.add_argument("--g1", action="store_true", help="also run quick+mem with 1 generation")
    ap.add_argument(
        "--no-mem-full", action="store_true", help="skip quick+mem at full generations (with --g1)"
    )
    ap.add_argument("--full-shapes", default="", help="kernel:index,... for the full-effort arm")
    ap.add_argument("--full-budget-s", type=int, default=120)
    ap.add_argument("--k-seeds", type=int, default=8)
    ap.add_argument("--random-seed", type=int, default=1234)
    ap.add_argument("--deadline-s", type=float, default=520.0)
    ap.add_argument("--bench-rounds", type=int, default=5)
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--device", default="cuda", help="cpu only for a dry run with a mocked helion")
    a = ap.parse_args()

    t_start = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    logdir = Path(tempfile.mkdtemp(prefix="helion-logs-"))
    logdir.mkdir(parents=True, exist_ok=True)

    import triton

    dev = a.device
    device_name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    kernels = _kernels()
    shapes: dict[str, Any] = dict(DEFAULT_SHAPES)
    if a.shapes:
        shapes.update({k: [tuple(s) for s in v] for k, v in json.loads(a.shapes).items()})
    full_set = set()
    for item in filter(None, a.full_shapes.split(",")):
        kname, idx = item.split(":")
        full_set.add((kname, int(idx)))

    result: dict[str, Any] = {
        "what": "Helion autotune: alone vs seeded from a memory of earlier shapes in this run",
        "command": " ".join(sys.argv),
        "device": device_name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "helion": getattr(helion, "__version__", "?"),
        "env": {k: v for k, v in os.environ.items() if k.startswith("HELION_")},
        "args": vars(a),
        "memory_policy": (
            "starts empty per kernel; after each shape takes every configuration "
            "any arm timed on it"
        ),
        "shapes": [],
    }

    def save():
        (out / "results.json").write_text(json.dumps(result, indent=1, default=str))

    def left():
        return a.deadline_s - (time.perf_counter() - t_start)

    arm_walls: list[float] = []

    def pack_logs():
        with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
            tar.add(logdir, arcname="helion_logs")

    for kname in filter(None, a.kernels.split(",")):
        fn, make, extra = kernels[kname]
        memory: list[Any] = []  # seedrank.Timing
        for si, shape in enumerate(shapes[kname][: a.n_shapes]):
            if left() < 1.3 * max(arm_walls or [30.0]):
                result.setdefault("skipped", []).append(f"{kname} {shape}: deadline")
                continue
            torch.manual_seed(0)
            args, ref = make(shape, dev)
            expected = ref()
            # the memory's shape key: every tensor argument's sizes, in order (as the package does)
            key_shape = tuple(int(d) for t in args if hasattr(t, "shape") for d in t.shape)
            rec = {
                "kernel": kname,
                "shape_index": si,
                "shape": list(shape),
                "key_shape": list(key_shape),
                "memory_before": {
                    "timings": len(memory),
                    "shapes": sorted({t.shape for t in memory}),
                    "configs": len({seedrank.config_key(t.config) for t in memory}),
                },
                "arms": {},
            }
            result["shapes"].append(rec)
            seeds = seedrank.rank_seeds(
                memory, kernel=kname, shape=key_shape, device=device_name, k=a.k_seeds
            )
            rec["seeds"] = [
                {"config": s.config, "score": round(s.score, 4), "reason": s.reason} for s in seeds
            ]

            arms = [("quick", a.effort, None, a.max_generations)]
            if seeds and not (a.no_mem_full and a.g1):
                arms.append(("quick+mem", a.effort, seeds, a.max_generations))
            if seeds and a.g1:
                arms.append(("quick+mem/g1", a.effort, seeds, 1))
            if (kname, si) in full_set:
                arms.append(("full", "full", None, None))

            # In-process compile caches favour whichever arm runs second on a shape (configs both
            # time, such as the default, compile once): alternate the order shape by shape, and
            # give every arm a fresh Triton disk cache.
            if si % 2 == 1:
                arms = arms[1:] + arms[:1]
            rec["arm_order"] = [arm for arm, *_ in arms]
            done = {}
            for arm, effort, arm_seeds, gens in arms:
                if left() < 1.3 * max(arm_walls or [60.0]):
                    rec["arms"][arm] = {"skipped": "deadline"}
                    continue
                base = logdir / f"{kname}_{si}_{arm.replace('+', '_').replace('/', '_')}"
                settings = dict(extra)
                settings.update(
                    autotune_effort=effort,
                    autotune_log=str(base),
                    autotune_log_details=True,
                    autotune_random_seed=a.random_seed,
                    autotune_progress_bar=False,
                )
                if gens is not None:
                    settings["autotune_max_generations"] = gens
                if arm_seeds:
                    settings["autotune_seed_configs"] = [
                        helion.Config(**s.config) for s in arm_seeds
                    ]
                if effort == "full":
                    settings["autotune_budget_seconds"] = int(
                        min(a.full_budget_s, max(30, left() - 60))
                    )
                os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")
                arm_rec = {
                    "effort": effort,
                    "max_generations": gens,
                    "n_seeds": len(arm_seeds or []),
                }
                rec["arms"][arm] = arm_rec
                try:
                    kern = helion.kernel(fn, **settings)
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    cfg = kern.autotune(args, force=True)
                    torch.cuda.synchronize()
                    arm_rec["autotune_wall_s"] = time.perf_counter() - t0
                    arm_walls.append(arm_rec["autotune_wall_s"])
                    arm_rec["chosen_config"] = dict(cfg.config)
                    got = kern(*args)
                    arm_rec["max_abs_err"] = float((got.float() - expected.float()).abs().max())
                    rows = read_helion_log(base)
                    arm_rec["log_rows"] = len(rows)
                    arm_rec["configs_timed_ok"] = sum(1 for r in rows if r.get("status") == "ok")
                    arm_rec["log_statuses"] = {
                        s: sum(1 for r in rows if r.get("status") == s)
                        for s in sorted({str(r.get("status")) for r in rows})
                    }
                    oks = [
                        float(r["perf_ms"])
                        for r in rows
                        if r.get("status") == "ok" and r.get("perf_ms")
                    ]
                    arm_rec["search_best_ms"] = min(oks) if oks else None
                    if arm_seeds:
                        seed_keys = {seedrank.config_key(s.config) for s in arm_seeds}
                        arm_rec["chosen_is_a_seed"] = (
                            seedrank.config_key(dict(cfg.config)) in seed_keys
                        )
                    done[arm] = (kern, rows)
                except Exception as exc:  # record and go on: one arm's failure is a result
                    arm_rec["error"] = f"{type(exc).__name__}: {str(exc)[:800]}"
                    arm_rec["traceback"] = traceback.format_exc()[-3000:]
                print(
                    kname,
                    shape,
                    arm,
                    {k: v for k, v in arm_rec.items() if k not in ("traceback",)},
                    flush=True,
                )
                save()

            if done:
                fns = {
                    arm: (lambda kk=kern_rows[0], aa=args: kk(*aa))
                    for arm, kern_rows in done.items()
                }
                fns["torch"] = ref
                try:
                    rec["kernel_time"] = bench_ms(None, fns, rounds=a.bench_rounds)
                except Exception as exc:
                    rec["kernel_time_error"] = f"{type(exc).__name__}: {exc}"
                kt = rec.get("kernel_time", {})
                if "quick" in kt:
                    for arm in kt:
                        if arm != "quick":
                            rec["arms"].get(arm, {})["speed_vs_quick"] = (
                                kt["quick"]["median_ms"] / kt[arm]["median_ms"]
                            )
                    for arm in done:
                        if arm != "quick" and "autotune_wall_s" in rec["arms"]["quick"]:
                            rec["arms"][arm]["wall_vs_quick"] = (
                                rec["arms"][arm]["autotune_wall_s"]
                                / rec["arms"]["quick"]["autotune_wall_s"]
                            )
            for _arm, (_, rows) in done.items():
                memory.extend(timings_from_rows(rows, kname, key_shape, device_name))
            rec["memory_after"] = len(memory)
            save()
            pack_logs()

    result["elapsed_s"] = time.perf_counter() - t_start
    save()
    pack_logs()
    print("done", result["elapsed_s"], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
