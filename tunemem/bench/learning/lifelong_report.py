"""The lifelong protocol's report: Markdown tables and the plots (curves, stream position)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunemem.bench.learning.report import goal_rows, header, summary_table, task_rows
from tunemem.bench.learning.summary import MILESTONES


def write_markdown(report: dict[str, Any], path: Path) -> None:
    """Summary (all scored tasks, second half), per family, goals, stream position, per task."""
    budget = report["budget"]
    marks = [m for m in MILESTONES if m <= budget]
    lines = header(report, "Learning benchmark (replay, lifelong)")
    lines.append(
        f"Warm-up: {', '.join(f'`{c}`' for c in report['warmup']) or 'none'}"
        f" ({report['n_warmup']} tasks, not scored). Each seed is one stream order; one memory"
        " serves the whole stream; a task's cache is ingested after it is tuned.\n"
    )
    lines.append("## Second half of the stream\n")
    lines += summary_table(report["summary_second_half"], marks)
    lines.append(
        f"\nBest single-source transfer (each other chip's best configuration tried once, best"
        f" source per task), second half: {report['best_single_transfer_second_half']:.3f}\n"
    )
    lines.append("## All scored tasks\n")
    lines += summary_table(report["summary"], marks)
    lines.append(f"\nBest single-source transfer: {report['best_single_transfer']:.3f}\n")
    lines.append("## Per kernel family, second half\n")
    for family, summary in report["families_second_half"].items():
        lines.append(f"### {family}\n")
        lines += summary_table(summary, marks)
        lines.append("")
    if report.get("goals"):
        lines.append("## Goals (default against similarity, second half, seed means)\n")
        lines += goal_rows(report["goals"]) + [""]
    lines.append("## Fraction of the optimum at 5 attempts by stream position\n")
    n = max((len(c) for c in report["by_position"].values()), default=0)
    lines.append("| arm | " + " | ".join(str(p) for p in range(n)) + " |")
    lines.append("|" + "---|" * (n + 1))
    for arm, curve in report["by_position"].items():
        lines.append(f"| {arm} | " + " | ".join(f"{v:.2f}" for v in curve) + " |")
    lines.append("\n## Per task (all positions)\n")
    lines += task_rows(report["tasks"], marks, budget)
    path.write_text("\n".join(lines) + "\n")


def write_plot(report: dict[str, Any], path: Path) -> None:
    """Left: mean best-so-far curve per arm; right: fraction at 5 attempts by position."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for arm, curve in report["mean_curves"].items():
        left.plot(range(1, len(curve) + 1), curve, label=arm)
    left.axhline(
        report["best_single_transfer"], color="grey", linestyle=":", label="best single transfer"
    )
    left.set_xlabel("attempts")
    left.set_ylabel("fraction of optimum (mean over tasks)")
    left.set_ylim(0, 1.02)
    left.legend(fontsize=7, loc="lower right")
    for arm, curve in report["by_position"].items():
        right.plot(range(len(curve)), curve, marker="o", markersize=3, label=arm)
    right.set_xlabel("position in the stream (scored tasks)")
    right.set_ylabel("fraction of optimum at 5 attempts")
    right.set_ylim(0, 1.02)
    fig.suptitle("lifelong learning benchmark (replay)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
