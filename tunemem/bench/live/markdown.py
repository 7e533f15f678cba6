"""The live benchmark's Markdown: averages per arm (stable shapes, then all), goals, and every
held-out shape, from a report `bench.live.report.score_report` scored; `save` writes the
report and its Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunemem.bench.common.markdown import cell, table
from tunemem.bench.common.results import memory_held, write_result
from tunemem.bench.live.report import SWEEP

_f = cell


def _yes(met: bool) -> str:
    return "yes" if met else "no"


def _averages(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| setting / arm | shapes | @1 | @3 | @5 | @10 | reached 90% | attempts to 90% "
        "| reached 95% | attempts to 95% | GPU s to 95% / sweep's | GPU s of 5 / sweep's "
        "| GPU s per run |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in summary.items():
        fa = row["fraction_at"]
        lines.append(
            f"| {name} | {row['shapes']} | {_f(fa['1'])} | {_f(fa['3'])} | {_f(fa['5'])} "
            f"| {_f(fa['10'])} | {row['reached_90']} | {_f(row['attempts_to_90_median'])} "
            f"| {row['reached_95']} | {_f(row['attempts_to_95_median'])} "
            f"| {_f(row['gpu_s_to_95_over_sweep_mean'])} "
            f"| {_f(row['gpu_s_at_5_over_sweep_mean'])} | {_f(row['gpu_s'], 1)} |"
        )
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    """The live benchmark's tables: averages per arm, then every held-out shape."""
    m = report["machine"]
    lines = [
        "# Live benchmark (agent tuning Triton kernels on the GPU)",
        "",
        f"Machine: {m.get('gpu')} ({m.get('sms')} SMs), torch {m.get('torch')}, triton "
        f"{m.get('triton')}, CUDA {m.get('cuda')}; {m.get('cpu')}, {m.get('cores')} cores.  ",
        *(
            [f"Run {r['run_id']}, {r['date']}: `{r['command']}`.  " for r in report["runs"]]
            if report.get("runs")
            else [f"Date: {report['date']}. Command: `{report['command']}`.  "]
        ),
        f"Memory: {report['service']}.  ",
        f"Budget {report['budget']} live attempts per run; latency: median of do_bench runs "
        f"(warm-up {report['settings']['warmup_ms']} ms, repetitions "
        f"{report['settings']['rep_ms']} ms); reference: {report['reference']}.  ",
        f"GPU seconds: {report['cost_rule']}",
        "",
        "## Averages over held-out shapes whose timing is stable",
        "",
        *_averages(report["summary"]),
        "",
        "Left out as noisy (repeat spread or reference drift past 10%): "
        + (", ".join(report.get("noisy_shapes") or []) or "none")
        + ". Over every held-out shape:",
        "",
        *_averages(report.get("summary_all_shapes") or {}),
    ]
    sweep = report["summary"].get(SWEEP)
    if sweep:
        lines += [
            "",
            f"The exhaustive sweep, for scale: {_f(sweep['attempts'], 1)} configurations and "
            f"{_f(sweep['gpu_s'], 1)} GPU s per stable shape on average; its row reads the "
            "sweep in the order it ran (a random order) as if it were a search.",
        ]
    goals = [
        (name, _f(goal.get("measured", goal.get("budgets_where_worse"))), _yes(goal["met"]))
        for name, goal in report.get("goals", {}).items()
    ]
    lines += ["", "## Goals", "", *table(("goal", "measured", "met"), goals)]
    lines += [
        "",
        "## Per held-out shape",
        "",
        "| task | held-out shape | reference ms (recorded) | repeat spread | sweep GPU s | run "
        "| @1 | @5 | @10 | attempts to 95% | GPU s to 95% |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for entry in report["shapes"]:
        sweep_score = entry.get("sweep", {}).get("score") or {}
        noise = entry.get("noise") or {}
        spread = _f(noise.get("repeat_spread_median"), 2) + (" noisy" if noise.get("noisy") else "")
        head = (
            f"| {entry['task']} | {entry['shape']} | {_f(entry.get('reference_ms'), 4)} "
            f"({_f(entry.get('recorded_reference_ms'), 4)}) | {spread} "
            f"| {_f(sweep_score.get('gpu_s'), 1)}"
        )
        for name, run in entry.get("runs", {}).items():
            if "score" not in run:
                lines.append(f"{head} | {name}: {run.get('error', 'not scored')[:100]} | | | | |")
                head = "| | | | | "
                continue
            s = run["score"]
            lines.append(
                f"{head} | {name} | {_f(s['fraction_at']['1'])} | {_f(s['fraction_at']['5'])} "
                f"| {_f(s['fraction_at']['10'])} | {_f(s['attempts_to_95'])} "
                f"| {_f(s['gpu_s_to_95'], 2)} |"
            )
            head = "| | | | | "
        if entry.get("error"):
            lines.append(f"{head} | error: {entry['error'][:120]} | | | | | |")
    for note in report.get("notes", []):
        lines += ["", f"- {note}"]
    return "\n".join(lines) + "\n"


LIVE_HELD = memory_held(
    "complete",
    "a fresh memory per held-out shape, holding the recorded H200 sweeps of the task's other "
    "shapes (same_task) or of every other task (all_tasks), and nothing of the held-out shape",
)


def save(out: Path, report: dict[str, Any], echo: bool = True) -> None:
    """Write live.json and live.md in `out` through `write_result`: the report must say what
    the memory held and how to reproduce it; the Markdown says both under its title."""
    report.setdefault("memory_held", LIVE_HELD)
    write_result(out, "live", report, render_markdown(report), echo=echo)
