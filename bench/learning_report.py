"""The learning benchmark's report: averages over targets, the Markdown tables and the plot.

Targets whose kernel was used to develop the method are reported apart from held-out ones
(`report["development_ops"]`), each group with its own averages, so a reader can tell tuning
data from test data.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

MILESTONES = (1, 5, 10, 20)


def average(results: dict[str, Any], arms: list[str]) -> dict[str, Any]:
    """Per arm, the mean over targets of the per-target seed means."""
    average: dict[str, Any] = {}
    for arm in arms:
        entries = [r["arms"][arm] for r in results.values() if arm in r["arms"]]
        if not entries:
            continue
        average[arm] = {
            "fraction_at": {
                str(m): statistics.fmean(e["fraction_at"][str(m)]["mean"] for e in entries)
                for m in MILESTONES
            },
            "first_attempt_feasible": statistics.fmean(
                e["first_attempt_feasible"] for e in entries
            ),
        }
    transfers = [max(r["naive_transfer"].values()) for r in results.values()]
    if transfers:
        average["best_single_transfer"] = statistics.fmean(transfers)
    return average


def _fmt_hits(hits: dict[str, Any], budget: int) -> str:
    if hits["median"] is None:
        return f">{budget} (0/{hits['of']})"
    return f"{hits['median']:g} ({hits['reached']}/{hits['of']})"


def groups(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Targets split into held-out and development kernels (one group when none is named)."""
    development = set(report.get("development_ops") or ())
    targets = report["targets"]
    if not development:
        return [("All targets", targets)]
    held = {k: e for k, e in targets.items() if e["op"] not in development}
    dev = {k: e for k, e in targets.items() if e["op"] in development}
    named = [
        (f"Held-out kernels ({', '.join(sorted({e['op'] for e in held.values()}))})", held),
        (f"Development kernels ({', '.join(sorted(development))})", dev),
    ]
    return [(title, entries) for title, entries in named if entries]


def _target_rows(targets: dict[str, Any], marks: list[int], budget: int) -> list[str]:
    header = "| target | arm | " + " | ".join(f"@{m}" for m in marks)
    lines = [header + " | to 90% | to 95% | 1st feasible |", "|" + "---|" * (len(marks) + 5)]
    for key, entry in targets.items():
        for arm, s in entry["arms"].items():
            cells = [
                f"{s['fraction_at'][str(m)]['mean']:.3f} ± {s['fraction_at'][str(m)]['std']:.3f}"
                for m in marks
            ]
            lines.append(
                f"| {key} | {arm} | "
                + " | ".join(cells)
                + f" | {_fmt_hits(s['attempts_to_90'], budget)}"
                f" | {_fmt_hits(s['attempts_to_95'], budget)}"
                f" | {s['first_attempt_feasible']:.2f} |"
            )
        transfer = ", ".join(f"{c} {f:.3f}" for c, f in entry["naive_transfer"].items())
        lines.append(f"| {key} | naive transfer | {transfer} |" + " |" * (len(marks) + 2))
    return lines


def _average_rows(mean: dict[str, Any], marks: list[int]) -> list[str]:
    lines = ["| arm | " + " | ".join(f"@{m}" for m in marks) + " | 1st feasible |"]
    lines.append("|" + "---|" * (len(marks) + 2))
    for arm, s in mean.items():
        if arm == "best_single_transfer":
            continue
        cells = [f"{s['fraction_at'][str(m)]:.3f}" for m in marks]
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {s['first_attempt_feasible']:.2f} |")
    if "best_single_transfer" in mean:
        lines.append(f"\nBest single-source transfer, averaged: {mean['best_single_transfer']:.3f}")
    return lines


def _goal_rows(targets: dict[str, Any]) -> list[str]:
    rows = [(k, e["goals"]) for k, e in targets.items() if "goals" in e]
    if not rows:
        return []
    names = list(rows[0][1])
    lines = ["| target | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for key, g in rows:
        lines.append(f"| {key} | " + " | ".join("yes" if g[n] else "NO" for n in names) + " |")
    return lines


def write_markdown(report: dict[str, Any], path: Path) -> None:
    """Per group of targets: fractions at milestones (mean ± std), attempts to 90/95%,
    averages over the group's targets and the goals."""
    budget = report["budget"]
    marks = [m for m in MILESTONES if m <= budget]
    lines = [
        "# Learning benchmark (replay, leave-one-chip-out)\n",
        f"Caches: `{report['caches']}`; seeds {report['seeds']}; budget {budget}; k {report['k']};"
        f" machine {report['machine']['cpu']}, {report['machine']['cores']} cores;"
        f" {report['elapsed_s']} s. Fractions are of the target's recorded optimum, best so far,"
        " mean ± std over seeds; attempts are the median over seeds that reached the threshold"
        " (reached/seeds).\n",
    ]
    if report.get("development_note"):
        lines.append(f"{report['development_note']}\n")
    arms = list(report.get("arms") or {})
    for title, targets in groups(report):
        lines.append(f"## {title}\n")
        lines += _target_rows(targets, marks, budget)
        lines.append(f"\n### {title}: averaged over targets\n")
        lines += _average_rows(average(targets, arms), marks)
        goal_lines = _goal_rows(targets)
        if goal_lines:
            lines.append(f"\n### {title}: goals (value_backoff, seed means)\n")
            lines += goal_lines
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def write_plot(report: dict[str, Any], path: Path) -> None:
    """Best-so-far fraction of the optimum against attempts, one panel per target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = list(report["targets"].items())
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
