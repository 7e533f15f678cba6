"""Memory first replayed on the CPU from the H100 logs of the Helion seeds runs (no GPU).

    python -m tunemem.bench.helion.replay_first RUN_DIR... \
        --out bench/results/helion/replay-memory-first --sha <commit>

walks each kernel's shapes in the run's order as a user of the memory-first mode would: the
memory starts empty, so the first shape is Helion's own search (the run's `quick` arm, whose
log is that memory); at every later shape `memory_first.plan_memory_first` decides, from that
memory alone, between the memory's candidates and Helion's seeded search.

- Trusted: each candidate's time at the new shape is looked up in the shape's logs (every arm,
  Helion's own search-time readings); the best found, against the best Helion alone found, is
  the replayed speed. Candidates no arm timed are unknown, and counted. The wall time is
  modelled, not measured: the `quick` arm's time to its first timed configuration (worker start
  and baseline, which Helion's finite search pays too) plus `k` times its mean time per timed
  configuration, against the `quick` arm's measured `autotune()` time.
- Not trusted: the mode runs Helion's search with its seeds; where the run holds an arm seeded
  with the same configurations, that arm's measured speed and wall ratio are the mode's.

The memory then takes what the mode timed (the candidates found, or the seeded arm's log).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tunemem.agent_client.tuners.helion.memory_first import (
    DEFAULT_CANDIDATES,
    DEFAULT_SEEDS,
    plan_memory_first,
)
from tunemem.agent_client.tuners.helion.ranking import Timing, config_key
from tunemem.bench.helion.report import analyse, arm_base, read_logs, timed


def modelled_wall_s(
    rows: Sequence[dict[str, Any]], k: int, *, serial_compile: bool = False
) -> float | None:
    """Time to the first timed configuration plus `k` mean per-configuration times, from one
    arm's log rows (`timestamp_s` of its `ok` rows). With `serial_compile`, each of the `k`
    also pays the mean `compile_time_s` in full: the finite search compiles in process, one
    configuration at a time, where the search's pace had parallel compiles."""
    ok = [r for r in rows if r.get("status") == "ok" and r.get("timestamp_s")]
    stamps = sorted(float(r["timestamp_s"]) for r in ok)
    if len(stamps) < 2:
        return None
    per_config = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    if serial_compile:
        compiles = [float(r["compile_time_s"]) for r in ok if r.get("compile_time_s")]
        per_config += sum(compiles) / len(compiles) if compiles else 0.0
    return stamps[0] + k * per_config


def replay_run(
    run: Path, k: int = DEFAULT_CANDIDATES, seed_k: int = DEFAULT_SEEDS
) -> dict[str, Any]:
    """One run folder, every kernel's shapes in order (see the module)."""
    result = json.loads((run / "results.json").read_text())
    logs = read_logs(run)
    measured = {(s["kernel"], s["index"]): s for s in analyse(run)["shapes"]}
    device = result["device"]
    out: dict[str, Any] = {"run": run.name, "device": device, "k": k, "seed_k": seed_k}
    rows: list[dict[str, Any]] = []
    memory: dict[str, list[Timing]] = {}
    for rec in result["shapes"]:
        kernel, index, key = rec["kernel"], rec["shape_index"], tuple(rec["key_shape"])
        quick_rows = logs.get(arm_base(kernel, index, "quick"))
        held = memory.setdefault(kernel, [])
        if index == 0:
            if quick_rows is not None:
                held += [Timing(kernel, key, device, c, ms) for c, ms in timed(quick_rows)]
            continue
        row: dict[str, Any] = {
            "kernel": kernel,
            "shape": rec["shape"],
            "memory_held": {"timings": len(held), "shapes": len({t.shape for t in held})},
        }
        rows.append(row)
        plan = plan_memory_first(
            held, kernel_name=kernel, shape=key, device=device, k=k, seed_k=seed_k
        )
        row["trusted"], row["reason"] = plan.trust.trusted, plan.trust.reason
        if quick_rows is None:
            row["not_replayable"] = "Helion alone's log of this shape was not returned"
            continue
        alone_best = min(ms for _, ms in timed(quick_rows))
        quick_wall = rec["arms"]["quick"]["autotune_wall_s"]
        if plan.trust.trusted:
            found: dict[str, tuple[dict[str, Any], float]] = {}
            for base, arm_rows in logs.items():
                if not base.startswith(f"{kernel}_{index}_"):
                    continue
                for cfg, ms in timed(arm_rows):
                    ck = config_key(cfg)
                    if ck not in found or ms < found[ck][1]:
                        found[ck] = (cfg, ms)
            hits = [
                found[config_key(c.config)]
                for c in plan.candidates
                if config_key(c.config) in found
            ]
            row["candidates"], row["candidates_found"] = len(plan.candidates), len(hits)
            if hits:
                row["speed"] = alone_best / min(ms for _, ms in hits)
            wall = modelled_wall_s(quick_rows, len(plan.candidates))
            serial = modelled_wall_s(quick_rows, len(plan.candidates), serial_compile=True)
            if wall is not None and serial is not None:
                row["wall_ratio_modelled"] = wall / quick_wall
                row["wall_ratio_modelled_serial"] = serial / quick_wall
            held += [Timing(kernel, key, device, c, ms) for c, ms in hits]
            continue
        seeds = [config_key(s.config) for s in plan.seeds]
        arms = measured[(kernel, index)]["arms"]
        same = [
            arm
            for arm in ("quick+mem",)  # the same search; a 1-generation arm is another call
            if arm in arms
            and arm_base(kernel, index, arm) in logs
            and seeds == [config_key(s["config"]) for s in rec.get("seeds", [])][: len(seeds)]
            and len(rec.get("seeds", [])) == len(seeds)
        ]
        row["seeded_arm"] = same[0] if same else None
        if not same and "speed" in arms.get("quick+mem/g1", {}):
            g1 = arms["quick+mem/g1"]
            row["one_generation"] = {"speed": g1["speed"], "wall_ratio": g1["wall_ratio"]}
        if same:
            arm = arms[same[0]]
            row["speed"], row["wall_ratio"] = arm.get("speed"), arm.get("wall_ratio")
            held += [
                Timing(kernel, key, device, c, ms)
                for c, ms in timed(logs[arm_base(kernel, index, same[0])])
            ]
    out["shapes"] = rows
    return out


def markdown(runs: Sequence[dict[str, Any]], command: str, sha: str) -> str:
    devices = sorted({run["device"] for run in runs})
    lines = [
        "# Memory first, replayed on the CPU from the H100 logs (not measured)",
        "",
        f"`{command}` at commit `{sha}`, on a CPU machine; the logs are those the runs "
        f"measured on {', '.join(devices)} (their folders here). Candidates {runs[0]['k']}, "
        f"seeds {runs[0]['seed_k']}, the trust rule's defaults (`trust.TrustPolicy`).",
        "",
        "Each kernel's shapes in the run's order; the memory starts empty and holds what a "
        "memory-first user would have timed (the first shape's Helion search, then what the "
        "mode timed). Speed: Helion alone's best search-time reading over the best the mode "
        "would have kept (found in the shape's logs). Wall: modelled for the memory path "
        "(time to Helion's first timed configuration plus k configurations at its mean pace, "
        "over Helion alone's measured autotune time; the second figure adds each "
        "configuration's mean compile time in series, as the finite search compiles one at a "
        "time); measured for a seeded arm. The trust "
        "rule's thresholds were set on these same logs: this is development data, not a test.",
        "",
        "| run | kernel | shape | memory held (timings / shapes) | verdict | why | candidates "
        "found | speed | wall ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        for s in run["shapes"]:
            verdict = "memory" if s["trusted"] else "search (seeded)"
            found = f"{s['candidates_found']} / {s['candidates']}" if "candidates" in s else ""
            if s.get("not_replayable"):
                speed, wall = s["not_replayable"], ""
            elif s["trusted"]:
                speed = _fmt(s.get("speed")) or "no candidate is in the shape's returned logs"
                wall = (
                    f"{_fmt(s.get('wall_ratio_modelled'))} to "
                    f"{_fmt(s.get('wall_ratio_modelled_serial'))} (modelled)"
                )
            elif s.get("seeded_arm"):
                speed = f"{_fmt(s.get('speed'))} ({s['seeded_arm']}, measured)"
                wall = f"{_fmt(s.get('wall_ratio'))} (measured)"
            elif s.get("one_generation"):
                g1 = s["one_generation"]
                speed = (
                    "not run at this effort (the same seeds for one generation: "
                    f"{_fmt(g1['speed'])}, measured)"
                )
                wall = f"({_fmt(g1['wall_ratio'])} for one generation, measured)"
            else:
                speed, wall = "no arm of the run ran these seeds at this effort", ""
            held = s["memory_held"]
            lines.append(
                f"| {run['run']} | {s['kernel']} | {s['shape']} | {held['timings']} / "
                f"{held['shapes']} | {verdict} | {s['reason']} | {found} | {speed} | {wall} |"
            )
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="path stem of .json and .md")
    parser.add_argument("--k", type=int, default=DEFAULT_CANDIDATES)
    parser.add_argument("--seed-k", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--sha", default="unknown", help="the commit the table names")
    args = parser.parse_args(argv)
    runs = [replay_run(run, args.k, args.seed_k) for run in args.runs]
    args.out.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    command = "python -m tunemem.bench.helion.replay_first " + " ".join(
        [*(str(run) for run in args.runs), "--out", str(args.out), "--k", str(args.k)]
        + ["--seed-k", str(args.seed_k)]
    )
    args.out.with_suffix(".md").write_text(markdown(runs, command, args.sha))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
