"""The learning benchmark's report tables and the leave-one-chip-out Markdown and plot.

The table helpers are shared with the lifelong report (`bench.learning.lifelong_report`):
a summary table per arm (fraction of the optimum at 1/5/10/20 attempts, top-k ranking quality,
first-attempt feasibility) and a per-task table with spread over seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunemem.bench.common.markdown import table
from tunemem.bench.common.results import memory_held, memory_held_line
from tunemem.bench.learning.summary import MILESTONES, TOP_KEYS


def _cells(means: dict[str, float], marks: list[int]) -> str:
    cells = [f"{means[str(m)]:.3f}" for m in marks]
    cells += [f"{means[k]:.3f}" if k in means else "" for k in TOP_KEYS]
    return " | ".join(cells) + f" | {means['first_attempt_feasible']:.2f}"


def summary_table(summary: dict[str, dict[str, float]], marks: list[int]) -> list[str]:
    """One row per arm: means over tasks."""
    head = " | ".join(f"@{m}" for m in marks)
    head += " | top-1 | top-3 | top-5 | best in memory | 1st feasible"
    lines = [f"| arm | {head} |", "|" + "---|" * (len(marks) + 6)]
    for arm, means in summary.items():
        lines.append(f"| {arm} | {_cells(means, marks)} |")
    return lines


def _hits(hits: dict[str, Any], budget: int) -> str:
    if hits["median"] is None:
        return f">{budget} (0/{hits['of']})"
    return f"{hits['median']:g} ({hits['reached']}/{hits['of']})"


def task_rows(tasks: dict[str, Any], marks: list[int], budget: int) -> list[str]:
    """One row per (task, arm) with mean ± std over seeds, and the naive-transfer line."""
    head = " | ".join(f"@{m}" for m in marks)
    lines = [
        f"| task | arm | {head} | to 90% | to 95% | top-1 | top-3 | top-5 | best in memory"
        " | 1st feasible |",
        "|" + "---|" * (len(marks) + 9),
    ]
    for name, entry in tasks.items():
        for arm, s in entry["arms"].items():
            cells = [
                f"{s['fraction_at'][str(m)]['mean']:.3f} ± {s['fraction_at'][str(m)]['std']:.3f}"
                for m in marks
            ]
            tops = [f"{s[k]['mean']:.3f}" if k in s else "" for k in TOP_KEYS]
            lines.append(
                f"| {name} | {arm} | "
                + " | ".join(cells)
                + f" | {_hits(s['attempts_to_90'], budget)} | {_hits(s['attempts_to_95'], budget)}"
                + " | "
                + " | ".join(tops)
                + f" | {s['first_attempt_feasible']:.2f} |"
            )
        transfer = ", ".join(f"{c} {f:.3f}" for c, f in entry["naive_transfer"].items())
        lines.append(f"| {name} | naive transfer | {transfer} |" + " |" * (len(marks) + 7))
    return lines


def goal_rows(goals: dict[str, bool]) -> list[str]:
    rows = [(g, "yes" if ok else "NO") for g, ok in goals.items()]
    return table(("goal", "met"), rows, compact=True)


LEARNING_HELD = {
    "loo": "for each target, a fresh memory holding the complete caches of the family's other "
    "chips (and of any source-only caches), then the outcomes of tuning each of them; the "
    "target's own cache never enters",
    "lifelong": "one memory per stream, growing: each task's complete cache is ingested after "
    "it is tuned, beside the agent's outcomes, so a task meets the complete caches of the "
    "tasks before it in the stream and never its own",
}


def learning_held(protocol: str) -> dict[str, str]:
    """What the memory held in a `bench learning` protocol: complete recorded spaces."""
    return memory_held("complete", LEARNING_HELD[protocol])


def header(report: dict[str, Any], title: str) -> list[str]:
    held = report.get("memory_held") or learning_held(report.get("protocol", "loo"))
    return (
        [
            f"# {title}\n",
            f"{memory_held_line(held)}\n",
            f"Caches: {', '.join(f'`{c}`' for c in report['caches'])}; {report['n_scored']} tasks;"
            f" seeds {report['seeds']}; budget {report['budget']}; k {report['k']}; embedder"
            f" {report['service_settings'].get('embedder')}; machine {report['machine']['cpu']},"
            f" {report['machine']['cores']} cores; {report['elapsed_s']} s. Fractions are of each"
            " task's recorded optimum, best so far, mean over seeds, then over tasks; top-k is the"
            " best of the service's first k exemplar configurations of the task's parameter space,"
            " asked before the task is tuned (no search); best in memory is the best of all the"
            " exemplar configurations of the task's family in memory then, the most any ranking"
            " could reach.\n",
        ]
        + noise_line(report)
        + dirt_line(report)
        + ([f"{report['note']}\n"] if report.get("note") else [])
    )


def noise_line(report: dict[str, Any]) -> list[str]:
    """What the memory was told, when it was not the recording (`--noise`, `--mislabel`)."""
    noise = report.get("noise") or {}
    if not noise.get("sigma") and not noise.get("mislabel"):
        return []
    counts = [len(m) for m in report.get("mislabelled", [])]
    return [
        f"Noisy memory: every ingested time multiplied by exp(N(0, {noise['sigma']})) and"
        f" {noise['mislabel']} of the runs ingested under another chip of their backend"
        f" ({', '.join(map(str, counts)) or 0} mislabelled per seed); the agent measures and is"
        " scored on the true recording.\n"
    ]


def dirt_line(report: dict[str, Any]) -> list[str]:
    """What a swarm added, when it added anything (`--partial`, `--replayed`,
    `--single-timings`; `bench.learning.dirty`)."""
    noise = report.get("noise") or {}
    if not any(noise.get(k) for k in ("partial", "replayed", "single_timings")):
        return []
    dirty = report.get("dirty") or []
    partial = ", ".join(str(len(d.get("partial") or [])) for d in dirty) or "0"
    replayed = ", ".join(str(len(d.get("replayed") or {})) for d in dirty) or "0"
    told = (
        f"Dirty memory: {noise.get('partial', 0)} of the runs also uploaded as partial runs "
        f"({partial} runs per seed, each as 2 uploads of 10 evaluations), "
        f"{noise.get('replayed', 0)} also uploaded as a replay labelled as another chip of "
        f"their backend ({replayed} per seed), and {noise.get('single_timings', 0)} of the "
        f"agent's evaluations reported as one timing moved by "
        f"exp(N(0, {noise.get('timing_sigma', 0)})) instead of the recorded mean with its "
        "spread; runs are scored on the true recorded times.\n"
    )
    return [told]


def write_markdown(report: dict[str, Any], path: Path) -> None:
    """Leave-one-chip-out: summary, per kernel family, goals, per task."""
    budget = report["budget"]
    marks = [m for m in MILESTONES if m <= budget]
    lines = header(report, "Learning benchmark (replay, leave-one-chip-out)")
    lines.append("## All targets\n")
    lines += summary_table(report["summary"], marks)
    lines.append(f"\nBest single-source transfer: {report['best_single_transfer']:.3f}\n")
    lines.append("## Per kernel family\n")
    for family, summary in report["families"].items():
        lines.append(f"### {family}\n")
        lines += summary_table(summary, marks) + [""]
    if report.get("goals"):
        lines.append("## Goals (default against similarity, seed means)\n")
        lines += goal_rows(report["goals"]) + [""]
    lines.append("## Per target\n")
    lines += task_rows(report["tasks"], marks, budget)
    path.write_text("\n".join(lines) + "\n")


def write_plot(report: dict[str, Any], path: Path) -> None:
    """Best-so-far fraction of the optimum against attempts, one panel per target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = list(report["tasks"].items())
    if not entries:
        return
    cols = min(4, len(entries))
    rows = (len(entries) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, (key, entry) in zip(axes.flat, entries, strict=False):
        for arm, s in entry["arms"].items():
            curve = s["mean_curve"]
            ax.plot(range(1, len(curve) + 1), curve, label=arm)
        best = max(entry["naive_transfer"].values(), default=0.0)
        ax.axhline(best, color="grey", linestyle=":", label="best single transfer")
        ax.set_title(key, fontsize=9)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("attempts")
        ax.set_ylabel("fraction of optimum")
    for ax in list(axes.flat)[len(entries) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
