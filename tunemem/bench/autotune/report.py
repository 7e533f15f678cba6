"""`bench autotune`'s summary, Markdown and trajectories (plain data in, plain data out)."""

from __future__ import annotations

import json
import statistics
from typing import Any


def _group(rows: list[dict[str, Any]], goals: dict[str, float]) -> dict[str, Any]:
    walls = [r["wall_ratio"] for r in rows if r.get("wall_ratio") is not None]
    speeds = [r["speed"] for r in rows if r.get("speed") is not None]
    full_s = sum(r["full"]["wall_s"] for r in rows)
    memory_s = sum(r["memory"]["wall_s"] for r in rows)
    fast = sum(1 for s in speeds if s >= goals["speed_at_least"])
    return {
        "shapes": len(rows),
        "full_wall_s": full_s,
        "memory_wall_s": memory_s,
        "wall_ratio_total": memory_s / full_s if full_s else None,
        "wall_ratio_median": statistics.median(walls) if walls else None,
        "shapes_wall_within_goal": sum(1 for w in walls if w <= goals["wall_ratio_at_most"]),
        "full_timed": sum(r["full"]["timed"] for r in rows),
        "memory_timed": sum(r["memory"]["timed"] for r in rows),
        "speed_mean": statistics.fmean(speeds) if speeds else None,
        "speed_min": min(speeds) if speeds else None,
        "shapes_speed_within_goal": fast,
        "share_speed_within_goal": fast / len(speeds) if speeds else None,
    }


def summarise(rows: list[dict[str, Any]], goals: dict[str, float]) -> dict[str, Any]:
    """Per task and over all shapes: wall seconds, their ratio, and the chosen speed."""
    tasks = sorted({r["task"] for r in rows})
    summary: dict[str, Any] = {t: _group([r for r in rows if r["task"] == t], goals) for t in tasks}
    if rows:
        total = _group(rows, goals)
        total["goal_wall"] = (total["wall_ratio_total"] or 0.0) <= goals["wall_ratio_at_most"]
        total["goal_speed"] = (total["share_speed_within_goal"] or 0.0) >= goals[
            "shapes_share_at_least"
        ]
        summary["all"] = total
    return summary


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    goals = report["goals"]
    lines = [
        "# Autotune benchmark: the full `triton.autotune` against the memory's drop-in",
        "",
        f"Machine: {m.get('gpu')}, torch {m.get('torch')}, triton {m.get('triton')}; "
        f"{m.get('cpu')}, {m.get('cores')} cores.  ",
        f"Run {report['run_id']} ({report['date']}): `{report['command']}`.  ",
        f"Drop-in: times top_k = {report['top_k']} of the given configurations "
        f"(exploration share {report['explore']}), ranked by a fresh memory per held-out shape "
        "that ingested the recorded H200 sweeps of the task's other shapes (embedded store, "
        "in-memory index, hashing embedder, over HTTP on localhost).  ",
        "Wall seconds: the first call of the key (prune, suggest, compile, timing, launch), each "
        "arm in its own process with an empty Triton cache, the task's shapes in order.  ",
        f"Speed: the full choice's median time over the drop-in's, re-timed interleaved "
        f"({report['rounds']} rounds of do_bench, median).  ",
        f"Goals: wall ratio <= {goals['wall_ratio_at_most']}, speed >= "
        f"{goals['speed_at_least']} on >= {goals['shapes_share_at_least']:.0%} of the shapes.",
        "",
        "| task | shapes | configs timed (full / drop-in) | wall s (full / drop-in) | "
        "wall ratio (total / median) | speed >= 0.98 | speed mean / min |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for task, s in report["summary"].items():
        lines.append(
            f"| {task} | {s['shapes']} | {s['full_timed']} / {s['memory_timed']} | "
            f"{s['full_wall_s']:.1f} / {s['memory_wall_s']:.1f} | "
            f"{_f(s['wall_ratio_total'])} / {_f(s['wall_ratio_median'])} | "
            f"{s['shapes_speed_within_goal']}/{s['shapes']} | "
            f"{_f(s['speed_mean'])} / {_f(s['speed_min'])} |"
        )
    total = report["summary"].get("all")
    if total:
        lines += [
            "",
            f"Goal wall ratio (total): {'met' if total['goal_wall'] else 'missed'}; "
            f"goal speed: {'met' if total['goal_speed'] else 'missed'} "
            f"({total['shapes_speed_within_goal']}/{total['shapes']} shapes).",
        ]
    lines += [
        "",
        "| task | shape | timed (full / drop-in) | wall s (full / drop-in) | ratio | "
        "full ms | drop-in ms | speed | drop-in's choice came from |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["shapes"]:
        lines.append(
            f"| {r['task']} | {r['shape']} | {r['full']['timed']} / {r['memory']['timed']} | "
            f"{r['full']['wall_s']:.2f} / {r['memory']['wall_s']:.2f} | "
            f"{_f(r['wall_ratio'])} | {_f(r['full_ms'], 4)} | {_f(r['memory_ms'], 4)} | "
            f"{_f(r['speed'])} | {chosen_origin(r)} |"
        )
    if report.get("notes"):
        lines += ["", "Notes:", *[f"- {n}" for n in report["notes"]]]
    return "\n".join(lines) + "\n"


def chosen_origin(row: dict[str, Any]) -> str:
    """Where the drop-in's chosen configuration came from (memory, exploration, all given)."""
    decision = row["memory"].get("decision") or {}
    if decision.get("how") != "memory":
        return decision.get("how", "-")
    chosen = row["memory"]["chosen"]
    for params, origin in zip(
        decision.get("configs") or [], decision.get("origins") or [], strict=False
    ):
        if all(params.get(k) == v for k, v in chosen.items()):
            return str(origin)
    return "memory"


def to_trajectories(
    task: Any, full: list[dict[str, Any]], memory: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The drop-in's reported trajectories, and the full autotune's timings as trajectories."""
    out: list[dict[str, Any]] = []
    for f, m in zip(full, memory, strict=True):
        reported = m.get("trajectories") or []
        for record in reported:
            record = json.loads(json.dumps(record))
            record["evidence"].update(role="drop-in", held_out=m["shape"])
            out.append(record)
        context = reported[0]["context"] if reported else {"chip": "unknown", "backend": "cuda"}
        attempts = []
        for index, (params, ms) in enumerate(f["timings"].items()):
            ok = ms is not None and ms != float("inf")
            attempts.append(
                {
                    "index": index,
                    "params": json.loads(params),
                    "compiled": ok,
                    "correct": True if ok else None,
                    "error_category": None if ok else "resources",
                    "latency_ms": ms if ok else None,
                }
            )
        out.append(
            {
                "version": 1,
                "source_format": "native",
                "source": f"bench-autotune-full/{task.name}/{f['shape']}",
                "task": {
                    "op": task.op,
                    "kernel": task.kernel,
                    "signature": {**f["dims"], "dtype": task.default_dtype},
                    "dtype": task.default_dtype,
                },
                "context": context,
                "attempts": attempts,
                "evidence": {
                    "role": "full_autotune",
                    "shape_name": f["shape"],
                    "tuner": "triton.autotune",
                    "latency_ms": "Triton autotuner's benchmark (median)",
                },
            }
        )
    return out


REPLAY_FIGURES = (
    ("speed_mean", "mean speed (best / chosen)"),
    ("share_speed_within_goal", "share of keys ≥ 0.98"),
    ("timed_share", "share of configurations timed"),
    ("random_k_mean", "random-k speed"),
)


def summary_table(result: dict[str, Any], first: str) -> list[str]:
    """The Markdown table of a replay's summary: each group's figures over all seeds (or key
    orders), [lowest – highest] of the seeds' own means after each."""
    ranges = result["by_seed"]["range"]
    lines = [
        f"| {first} | keys | " + " | ".join(label for _, label in REPLAY_FIGURES) + " |",
        "|---|---|" + "---|" * len(REPLAY_FIGURES),
    ]
    for group, figures in result["summary"].items():
        cells = []
        for name, _ in REPLAY_FIGURES:
            low, high = ranges.get(group, {}).get(name, [None, None])
            spread = "" if low is None else f" [{low:.3f} – {high:.3f}]"
            cells.append(f"{figures[name]:.3f}{spread}")
        lines.append(f"| {group} | {figures['keys']} | " + " | ".join(cells) + " |")
    return lines


def replay_markdown(result: dict[str, Any]) -> str:
    """The replay's summary as Markdown: each group's figures over all seeds (or key orders),
    with their range over seeds in brackets."""
    cold = result["protocol"] == "cold"
    seeds = ", ".join(map(str, result["by_seed"]["seeds"]))
    lines = [
        f"# Drop-in replayed on the recorded H200 sweeps: {result['protocol']} memory",
        "",
        f"Explore {result['explore']}, top_k {result['top_k']}, embedder {result['embedder']}; "
        f"{'key orders' if cold else 'exploration seeds'} {seeds}. Each figure is the mean "
        "over all seeds' keys, [lowest – highest] of the seeds' own means after it.",
        "",
        *summary_table(result, "group" if cold else "top_k"),
    ]
    return "\n".join(lines) + "\n"
