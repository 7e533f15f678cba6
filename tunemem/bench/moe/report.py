"""The fused-MoE replay's figures: speed against the reference per batch size, GPU seconds
spent tuning, the end-to-end sum over batch sizes (weighted equally), and the goals."""

from __future__ import annotations

from typing import Any

from tunemem.kernels.moe_plan import HELD_OUT

ARMS = ("tool", "tool_no_memory", "sample384", "copy_nearest", "vllm_default")
LABELS = {
    "tool": "tune moe (memory)",
    "tool_no_memory": "tune moe (no memory)",
    "sample384": "best of 384 sampled",
    "copy_nearest": "copy nearest GPU's file",
    "vllm_default": "vLLM default",
}
GOAL_SPEED = 0.98
GOAL_SHARE = 0.90
GOAL_TIMED = 96


def _speed(row: dict[str, Any], arm: str) -> float | None:
    us = row[arm]["us"]
    return row["reference_us"] / us if us else None


def arm_figures(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm over every (case, batch size) of `cases`: mean speed, the share at >= 0.98,
    timed configurations, GPU seconds."""
    out: dict[str, Any] = {}
    for arm in ARMS:
        speeds = [_speed(r, arm) for c in cases for r in c["rows"]]
        ok = [s for s in speeds if s is not None]
        out[arm] = {
            "batch_sizes": len(speeds),
            "failed": len(speeds) - len(ok),
            "mean_speed": sum(ok) / len(speeds) if speeds else None,
            "share_at_goal": sum(s >= GOAL_SPEED for s in ok) / len(speeds) if speeds else None,
            "max_timed_per_batch": max(r[arm]["timed"] for c in cases for r in c["rows"]),
            "gpu_s": sum(r[arm]["gpu_s"] for c in cases for r in c["rows"]),
        }
    return out


def summarise(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The arms' figures over every case, over the development and the held-out cases apart,
    per case the end-to-end sum ratio, and the goals."""
    out: dict[str, Any] = {"arms": arm_figures(cases), "cases": {}}
    for part in ("development", "held_out"):
        chosen = [c for c in cases if (c["case"] in HELD_OUT) == (part == "held_out")]
        out[part] = arm_figures(chosen) if chosen else None
    for case in cases:
        ref = sum(r["reference_us"] for r in case["rows"])
        per_arm = {}
        for arm in ARMS:
            values = [r[arm]["us"] for r in case["rows"]]
            per_arm[arm] = ref / sum(values) if all(values) else None
        out["cases"][case["case"]] = {"end_to_end_speed": per_arm, "reference_sum_us": ref}
    tool, sample = out["arms"]["tool"], out["arms"]["sample384"]
    full_s = sample["gpu_s"] * 1920 / 384
    out["goals"] = {
        "share_at_0.98": tool["share_at_goal"],
        "share_goal_met": (tool["share_at_goal"] or 0) >= GOAL_SHARE,
        "max_timed_per_batch": tool["max_timed_per_batch"],
        "timed_goal_met": tool["max_timed_per_batch"] <= GOAL_TIMED,
        "gpu_s_tool": tool["gpu_s"],
        "gpu_s_full_search_estimate": full_s,
        "gpu_fraction_of_full": tool["gpu_s"] / full_s if full_s else None,
        "ahead_of_copy_on_average": (tool["mean_speed"] or 0)
        > (out["arms"]["copy_nearest"]["mean_speed"] or 0),
        "ahead_of_default_on_average": (tool["mean_speed"] or 0)
        > (out["arms"]["vllm_default"]["mean_speed"] or 0),
    }
    return out


def held(case: dict[str, Any]) -> str:
    return " (held out)" if case["case"] in HELD_OUT else ""


def _fmt(value: float | None, digits: int = 3) -> str:
    return "failed" if value is None else f"{value:.{digits}f}"


def markdown(report: dict[str, Any]) -> str:
    summary = report["summary"]
    lines = [
        "# Fused-MoE tuning on the H200: `tunemem tune moe` replayed on recorded timings",
        "",
        f"Command: `{report['command']}` (CPU: {report['machine']['cpu']}). The timings were "
        "recorded on one NVIDIA H200 by `python -m tunemem.kernels.moe_sweep` "
        "(bench/results/moe/h200-landscape/); the tool's rounds ran on the CPU against them, "
        "restricted to the recorded configurations. Memory: vLLM's shipped files "
        f"({report['memory']['shipped_folder']}, no H200 file) and nothing measured on the "
        f"H200. Budget: {report['budget']} timed configurations per batch size, seed "
        f"{report['seed']}. Speed = reference time / arm's time, the reference being the best "
        "recorded configuration (sample, shipped and default ones together). GPU seconds = "
        "161 layer calls per timed configuration (vLLM's benchmark_config while tuning) at the "
        "recorded time; compilation not included (about "
        f"{report['compile_core_s_per_config']:.1f} core-seconds per distinct configuration, "
        "measured).",
        "",
        "## Summary over every case and batch size",
        "",
        "| arm | mean speed | share >= 0.98 | failed | timed per batch size | GPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm in ARMS:
        a = summary["arms"][arm]
        lines.append(
            f"| {LABELS[arm]} | {_fmt(a['mean_speed'])} | {_fmt(a['share_at_goal'], 2)} | "
            f"{a['failed']} | {a['max_timed_per_batch']} | {a['gpu_s']:.1f} |"
        )
    for part, title in (("development", "development cases"), ("held_out", "held-out cases")):
        if summary.get(part):
            cells = ", ".join(
                f"{LABELS[a]} {_fmt(summary[part][a]['mean_speed'])} "
                f"({_fmt(summary[part][a]['share_at_goal'], 2)} at >= 0.98)"
                for a in ARMS
            )
            lines += ["", f"Mean speed on the {title}: {cells}."]
    g = summary["goals"]
    lines += [
        "",
        f"Goals: >= 0.98 on >= 90 % of batch sizes: {_fmt(g['share_at_0.98'], 2)} "
        f"({'met' if g['share_goal_met'] else 'not met'}); <= 96 timed per batch size: "
        f"{g['max_timed_per_batch']} ({'met' if g['timed_goal_met'] else 'not met'}); GPU time "
        f"{g['gpu_s_tool']:.1f} s against an estimated {g['gpu_s_full_search_estimate']:.0f} s "
        f"for the full 1,920 (5 x the 384-sample's), {_fmt(g['gpu_fraction_of_full'], 4)} of "
        f"it; ahead of copying the nearest file on average: {g['ahead_of_copy_on_average']}; "
        f"ahead of vLLM's default: {g['ahead_of_default_on_average']}.",
        "",
    ]
    for case in report["cases"]:
        e2e = summary["cases"][case["case"]]["end_to_end_speed"]
        lines += [
            f"## {case['case']}{held(case)}: E={case['E']}, N={case['N']}, "
            f"hidden {case['hidden']}, top-{case['topk']}, {case['dtype']} ({case['model']})",
            "",
            f"Recorded configurations: {case['recorded_configs']}; nearest GPU's file: "
            f"`{case['nearest_file']}`; distinct configurations the tool timed: "
            f"{case['tool_distinct_configs']}.",
            "",
            "| M | reference us | memory: speed (timed, found by) | no memory | best of 384 | "
            "copy nearest | vLLM default |",
            "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for row in case["rows"]:
            tool = row["tool"]
            lines.append(
                f"| {row['m']} | {row['reference_us']:.1f} | {_fmt(_speed(row, 'tool'))} "
                f"({tool['timed']}, {tool['found_by']} r{tool['found_in_round']}) | "
                f"{_fmt(_speed(row, 'tool_no_memory'))} | {_fmt(_speed(row, 'sample384'))} | "
                f"{_fmt(_speed(row, 'copy_nearest'))} | {_fmt(_speed(row, 'vllm_default'))} |"
            )
        sweep = case.get("budget_sweep") or []
        if sweep:
            lines += [
                "",
                "| budget | arm | mean speed | share >= 0.98 |",
                "| ---: | --- | ---: | ---: |",
            ]
            lines += [
                f"| {s['budget']} | {s['arm']} | {s['mean_speed']:.3f} | {s['share_at_0.98']:.2f} |"
                for s in sweep
            ]
        lines += [
            "",
            "End to end (sum over batch sizes, weighted equally): "
            + ", ".join(f"{LABELS[a]} {_fmt(e2e[a])}" for a in ARMS)
            + ".",
            "",
        ]
    return "\n".join(lines) + "\n"
