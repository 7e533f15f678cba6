"""The Helion seeds run as a table, and what the CPU can replay from its logs.

`python -m tunemem.bench.helion.report RUN_DIR... --out bench/results/helion/summary` reads each
run folder (`results.json` written by `seeds_gpu.py`, and `logs.tar.gz`: every configuration
Helion timed, per arm and shape) and writes `<out>.json` and `<out>.md`:

- per shape after a kernel's first: each arm's autotune wall time, configurations timed, the
  chosen kernel's time (interleaved re-timing, median of rounds) and its ratio to Helion alone
  at the same effort; the Done-means bar (speed >= 0.98 at <= 0.5 of the wall time);
- replayed on the CPU from the logs: the seeds the package's ranking picks from the earlier
  shapes' timings (checked against the seeds the run used), and "seeds alone": the best of
  those seeds as Helion timed them in the seeded arm, against the best Helion alone found
  (both Helion's own search-time readings, not re-timed).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tunemem.agent_client.tuners.helion.memory_first import plan_memory_first
from tunemem.agent_client.tuners.helion.ranking import Timing, config_key, rank_seeds

SPEED_BAR = 0.98
WALL_BAR = 0.5


def read_logs(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Every arm's log rows by base name ("rms_norm_1_quick_mem"), configs joined."""
    files: dict[str, bytes] = {}
    archive = run / "logs.tar.gz"
    if archive.exists():
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None:
                    files[Path(member.name).name] = handle.read()
    logs: dict[str, list[dict[str, Any]]] = {}
    for name, blob in files.items():
        if not name.endswith(".csv"):
            continue
        base = name[: -len(".csv")]
        configs: dict[str, Any] = {}
        for line in files.get(base + ".meta.jsonl", b"").decode().splitlines():
            if line.strip():
                configs.update(json.loads(line).get("configs") or {})
        rows = list(csv.DictReader(io.StringIO(blob.decode())))
        for row in rows:
            row["config_dict"] = configs.get(row.get("config_id", ""))
        logs[base] = rows
    return logs


def timed(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """(configuration, Helion's time in ms) of every `ok` row with both."""
    return [
        (row["config_dict"], float(row["perf_ms"]))
        for row in rows
        if row.get("status") == "ok" and row.get("perf_ms") and row.get("config_dict")
    ]


def arm_base(kernel: str, index: int, arm: str) -> str:
    return f"{kernel}_{index}_{arm.replace('+', '_').replace('/', '_').replace('-', '_')}"


def analyse(run: Path) -> dict[str, Any]:
    """One run folder's shapes, arms, bar and replay (see the module)."""
    result = json.loads((run / "results.json").read_text())
    logs = read_logs(run)
    k_seeds = int(result["args"].get("k_seeds", 8))
    device = result["device"]
    shapes = []
    for rec in result["shapes"]:
        kernel, index = rec["kernel"], rec["shape_index"]
        times = rec.get("kernel_time", {})
        quick = rec["arms"].get("quick", {})
        row: dict[str, Any] = {
            "kernel": kernel,
            "shape": rec["shape"],
            "index": index,
            "memory_before": rec["memory_before"],
            "arm_order": rec.get("arm_order"),
            "arms": {},
        }
        per_mode = "timings" not in rec["memory_before"]  # a memory per mode (memory first)
        for arm, data in rec["arms"].items():
            if "same_call_as" in data:  # memory first fell back to the quick+mem call itself
                row["arms"][arm] = {**row["arms"][data["same_call_as"]], **data}
                continue
            entry: dict[str, Any] = {
                key: data.get(key)
                for key in ("autotune_wall_s", "configs_timed_ok", "n_seeds", "chosen_is_a_seed")
            }
            if "skipped" in data or "error" in data:
                entry["not_run"] = data.get("skipped") or data.get("error")
            if arm in times:
                entry["median_ms"] = times[arm]["median_ms"]
                entry["spread_pct"] = times[arm]["spread_pct"]
            if "mode" in data:
                entry["mode"] = data["mode"]
            if per_mode and arm in rec["memory_before"]:
                entry["memory_held"] = rec["memory_before"][arm]
            if arm != "quick" and arm in times and "quick" in times:
                entry["speed"] = times["quick"]["median_ms"] / times[arm]["median_ms"]
                entry["wall_ratio"] = data["autotune_wall_s"] / quick["autotune_wall_s"]
                entry["bar_met"] = entry["speed"] >= SPEED_BAR and entry["wall_ratio"] <= WALL_BAR
            row["arms"][arm] = entry
        if "full" in times:  # Helion's full effort ran here: every arm against it too
            for arm, entry in row["arms"].items():
                if arm != "full" and entry.get("median_ms"):
                    entry["speed_vs_full"] = times["full"]["median_ms"] / entry["median_ms"]
        if index > 0 and per_mode:
            row["replay"] = replay_decision(logs, rec, result)
        elif index > 0:
            row["replay"] = replay(logs, rec, kernel, index, device, k_seeds, result)
        shapes.append(row)
    return {
        "run": run.name,
        "command": result["command"],
        "device": device,
        "versions": {k: result[k] for k in ("python", "torch", "triton")},
        "env": result["env"],
        "skipped": result.get("skipped", []),
        "logs_returned": sorted(logs),
        "memory_policy": result.get("memory_policy"),
        "shapes": shapes,
    }


def replay(
    logs: dict[str, list[dict[str, Any]]],
    rec: dict[str, Any],
    kernel: str,
    index: int,
    device: str,
    k_seeds: int,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Re-rank the seeds from the earlier shapes' logs and score "seeds alone" (the module)."""
    earlier = [s for s in result["shapes"] if s["kernel"] == kernel and s["shape_index"] < index]
    memory: list[Timing] = []
    missing = []
    for shape in earlier:
        for arm in shape["arms"]:
            base = arm_base(kernel, shape["shape_index"], arm)
            if base not in logs:
                if "autotune_wall_s" in shape["arms"][arm]:
                    missing.append(base)
                continue
            memory += [
                Timing(kernel, tuple(shape["key_shape"]), device, cfg, ms)
                for cfg, ms in timed(logs[base])
            ]
    out: dict[str, Any] = {"memory_timings": len(memory), "logs_missing": missing}
    if missing:
        return out
    seeds = rank_seeds(memory, kernel=kernel, shape=rec["key_shape"], device=device, k=k_seeds)
    out["seeds_match_run"] = [s.config for s in seeds] == [s["config"] for s in rec["seeds"]]
    seed_keys = {config_key(s.config) for s in seeds}
    quick_log = logs.get(arm_base(kernel, index, "quick"))
    out["seeded_logs_returned"] = any(
        arm_base(kernel, index, arm) in logs for arm in ("quick+mem", "quick+mem/g1")
    )
    for arm in ("quick+mem", "quick+mem/g1"):
        seeded_log = logs.get(arm_base(kernel, index, arm))
        if seeded_log is None or quick_log is None:
            continue
        seed_times = [ms for cfg, ms in timed(seeded_log) if config_key(cfg) in seed_keys]
        if seed_times:
            alone_best = min(ms for _, ms in timed(quick_log))
            out["seeds_alone_speed"] = alone_best / min(seed_times)
            out["seeds_timed"] = len(seed_times)
            break
    return out


def replay_decision(
    logs: dict[str, list[dict[str, Any]]], rec: dict[str, Any], result: dict[str, Any]
) -> dict[str, Any]:
    """A run with memory first: rebuild that mode's memory from the logs (the first shape's
    Helion search, then what the mode timed) and plan again: the run's verdict and candidates?"""
    kernel, index, device = rec["kernel"], rec["shape_index"], result["device"]
    memory: list[Timing] = []
    for shape in result["shapes"]:
        if shape["kernel"] != kernel or shape["shape_index"] >= index:
            continue
        mem_first = shape["arms"].get("mem-first", {})
        arm = "quick" if shape["shape_index"] == 0 else mem_first.get("same_call_as", "mem-first")
        base = arm_base(kernel, shape["shape_index"], arm)
        if base not in logs:
            return {"logs_missing": [base], "memory_timings": len(memory)}
        key = tuple(shape["key_shape"])
        memory += [Timing(kernel, key, device, cfg, ms) for cfg, ms in timed(logs[base])]
    plan = plan_memory_first(
        memory,
        kernel_name=kernel,
        shape=rec["key_shape"],
        device=device,
        k=int(result["args"]["k_candidates"]),
        seed_k=int(result["args"]["k_seeds"]),
    )
    out: dict[str, Any] = {"memory_timings": len(memory), "logs_missing": []}
    out["verdict_matches_run"] = plan.trust.trusted == rec["mem_first_decision"]["trusted"]
    ran = rec["arms"].get("mem-first", {}).get("candidates")
    if ran is not None:
        out["candidates_match_run"] = [c.config for c in plan.candidates] == [
            c["config"] for c in ran
        ]
    return out


def markdown(runs: Sequence[dict[str, Any]], sha: str) -> str:
    lines = [
        "# Helion autotune with the memory's seeds, against Helion alone (H100, one run each)",
        "",
        "What the memory held: nothing at each kernel's first shape; before every later shape, "
        "every configuration any arm of this run timed on the kernel's earlier shapes (Helion's "
        "own search-time timings from `HELION_AUTOTUNE_LOG`), in the run's process. No other "
        "data, no other chip.",
        "",
        f"Code: `tunemem/bench/helion/seeds_gpu.py` and the ranking at commit `{sha}` "
        "(`ranking.py` is the code the runs loaded, reformatted; README.md here says how "
        "each run's copy of the script differs from this one).",
        "",
        "Speed: Helion alone's kernel time over the arm's (re-timed interleaved, 5 rounds of "
        "`do_bench`, median). Wall: the arm's `kernel.autotune()` seconds over Helion alone's. "
        f"The bar (issue 37): speed >= {SPEED_BAR} at wall <= {WALL_BAR}.",
        "",
    ]
    for run in runs:
        lines += [
            f"## {run['run']}: {run['device']}",
            "",
            f"`{run['command']}`  ",
            f"Versions: Python {run['versions']['python']}, torch {run['versions']['torch']}, "
            f"Triton {run['versions']['triton']}, Helion 1.4.0. Environment: "
            + ", ".join(f"`{k}={v}`" for k, v in sorted(run["env"].items())),
            "",
            "| kernel | shape | memory held (timings / shapes) | arm | wall s | timed | "
            "kernel ms (spread %) | speed | wall ratio | bar |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        if run.get("memory_policy") and "per mode" in run["memory_policy"]:
            lines[-4:-4] = [f"What the memory held: {run['memory_policy']}.", ""]
        for shape in run["shapes"]:
            if not shape["arms"]:
                lines.append(
                    f"| {shape['kernel']} | {shape['shape']} | {_held(shape, {})} "
                    "| none finished (the command's time limit) | | | | | | |"
                )
            for arm, data in shape["arms"].items():
                held = _held(shape, data)
                if data.get("not_run"):
                    lines.append(
                        f"| {shape['kernel']} | {shape['shape']} | {held} | {arm} | "
                        f"not run ({data['not_run']}) | | | | | |"
                    )
                    continue
                ms = data.get("median_ms")
                name = arm
                if data.get("mode"):
                    name += f" ({data['mode']}" + (
                        f", the {data['same_call_as']} call)" if data.get("same_call_as") else ")"
                    )
                lines.append(
                    f"| {shape['kernel']} | {shape['shape']} | {held} | {name} | "
                    f"{data['autotune_wall_s']:.1f} | "
                    f"{data['configs_timed_ok']} | "
                    + (f"{ms:.4f} ({data['spread_pct']:.1f})" if ms else "")
                    + f" | {_fmt(data.get('speed'))} | {_fmt(data.get('wall_ratio'))} | "
                    + {True: "met", False: "not met", None: ""}[data.get("bar_met")]
                    + " |"
                )
        lines += _full_lines(run)
        lines += ["", "Replayed on the CPU from the logs:", "", *_replay_lines(run)]
        if run["skipped"]:
            lines += ["", "Not run (the command's time ran out): " + "; ".join(run["skipped"])]
        lines.append("")
    return "\n".join(lines)


def _full_lines(run: dict[str, Any]) -> list[str]:
    """Where Helion's full effort ran: each arm's speed against it (its kernel time over the
    arm's, from the same interleaved re-timing)."""
    lines: list[str] = []
    for shape in run["shapes"]:
        against = [
            f"{arm} {data['speed_vs_full']:.3f}"
            for arm, data in shape["arms"].items()
            if "speed_vs_full" in data
        ]
        if against:
            full = shape["arms"]["full"]
            lines.append(
                f"- {shape['kernel']} {shape['shape']} (full: {full['autotune_wall_s']:.1f} s, "
                f"{full['configs_timed_ok']} timed): " + ", ".join(against)
            )
    return ["", "Against Helion's full effort, where it ran:", "", *lines] if lines else []


def _replay_lines(run: dict[str, Any]) -> list[str]:
    """The run's CPU replay, one line per shape after a kernel's first."""
    lines: list[str] = []
    for shape in run["shapes"]:
        rep = shape.get("replay")
        if rep is None:
            continue
        head = f"- {shape['kernel']} {shape['shape']}: "
        if rep["logs_missing"]:
            lines.append(
                head + "not replayable (logs not returned: " + ", ".join(rep["logs_missing"]) + ")"
            )
            continue
        if "verdict_matches_run" in rep:
            text = (
                f"memory first's memory rebuilt from the logs ({rep['memory_timings']} "
                "timings) gives the run's verdict: "
                + ("yes" if rep["verdict_matches_run"] else "no")
            )
            if "candidates_match_run" in rep:
                text += ", and its candidates: " + ("yes" if rep["candidates_match_run"] else "no")
            lines.append(head + text)
            continue
        text = (
            f"the ranking re-picks the run's seeds from {rep['memory_timings']} "
            f"timings: {'yes' if rep.get('seeds_match_run') else 'no'}"
        )
        if "seeds_alone_speed" in rep:
            text += (
                f"; seeds alone (best of {rep['seeds_timed']} seeds as timed in the seeded "
                f"arm) reach {rep['seeds_alone_speed']:.3f} of Helion alone's best reading"
            )
        elif not rep.get("seeded_logs_returned"):
            text += "; the seeded arms' logs of this shape were not returned (no seeds-alone)"
        lines.append(head + text)
    return lines


def _held(shape: dict[str, Any], arm: dict[str, Any]) -> str:
    """'timings / shapes' the arm's memory held (one memory per run, or the arm's mode's)."""
    held = arm.get("memory_held") or shape["memory_before"]
    if "timings" not in held:
        return "-"
    return f"{held['timings']} / {len(held['shapes'])}"


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="path stem of .json and .md")
    parser.add_argument("--sha", default="unknown", help="the commit the table names")
    args = parser.parse_args(argv)
    runs = [analyse(run) for run in args.runs]
    args.out.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(runs, args.sha))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
