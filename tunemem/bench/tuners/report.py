"""`bench tuners` results as Markdown (summary, goals, per-task table) and a plot of the mean
fraction of the optimum against the budget per strategy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunemem.bench.common.results import memory_held, memory_held_line


def _budgets(result: dict[str, Any]) -> list[int]:
    return list(result["settings"]["budgets"])


def _memory_line(settings: dict[str, Any]) -> str:
    mode = settings.get("memory", "caches")
    if mode == "self-fed":
        return "self-fed (empty at the start; only the strategy's own source runs, uploaded)"
    if mode == "kt-runs":
        return (
            f"the cache files of Kernel Tuner {settings.get('source_strategy')} runs on the "
            "sources (only what they evaluated), ingested"
        )
    return "the sources tuned by the strategy, then their whole caches ingested"


def held(settings: dict[str, Any]) -> dict[str, str]:
    """What the memory held, by the run's memory mode (`caches`: complete recorded spaces;
    `self-fed` and `kt-runs`: only what earlier runs timed)."""
    mode = settings.get("memory", "caches")
    kind = "complete" if mode == "caches" else "self-fed"
    return memory_held(kind, _memory_line(settings) + "; the target's own cache never enters")


def _evals(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def goals(result: dict[str, Any]) -> list[str]:
    """The issue's goals for this benchmark, each with whether the run meets it."""
    budgets = _budgets(result)
    summary = result["summary"]
    tasks = result["tasks"]
    others = [a for a in summary if a not in ("tunemem", "random_exact")]
    if "tunemem" not in summary or not others:
        return []
    ours = summary["tunemem"]
    ahead_mean = all(ours[str(b)] > max(summary[a][str(b)] for a in others) for b in budgets)
    ahead_tasks = sum(
        all(
            t["arms"]["tunemem"]["fraction_at"][str(b)]["mean"]
            > max(t["arms"][a]["fraction_at"][str(b)]["mean"] for a in others)
            for b in budgets
        )
        for t in tasks.values()
    )
    best95 = [summary[a]["evals_to_95"] for a in others if summary[a]["evals_to_95"] is not None]
    ours95 = ours["evals_to_95"]
    if ours95 is None:
        tenth = "tunemem does not reach 95 % on every task"
    elif not best95:
        tenth = f"tunemem {ours95:.1f}; no Kernel Tuner strategy reaches 95 % on every task"
    else:
        tenth = f"tunemem {ours95:.1f} against the best strategy's {min(best95):.1f}"
    at10 = ours.get("10")
    if result["settings"].get("memory", "caches") != "caches":
        return _self_fed_goals(ours, summary, others, budgets)
    return [
        f"- ahead of the best Kernel Tuner strategy at every budget on average: "
        f"{'yes' if ahead_mean else 'no'}",
        f"- ahead at every budget on {ahead_tasks} of {len(tasks)} tasks (goal: all but one)",
        f"- fraction of the optimum within 10 evaluations on average: "
        f"{'-' if at10 is None else f'{at10:.3f}'} (goal 0.95)",
        f"- evaluations to 95 % (mean over tasks of the median over seeds): {tenth} "
        "(goal: at most a tenth)",
        f"- methodology score: {ours['score']:.3f} (goal 0.9)",
    ]


def _self_fed_goals(
    ours: dict[str, Any], summary: dict[str, Any], others: list[str], budgets: list[int]
) -> list[str]:
    """Issue 27's goals for a memory filled only by tuning runs."""
    behind = [b for b in budgets if ours[str(b)] <= max(summary[a][str(b)] for a in others)]
    curve = [ours[str(b)] for b in budgets]
    rising = all(later > earlier for earlier, later in zip(curve, curve[1:], strict=False))

    def at(b: int) -> str:
        return "-" if str(b) not in ours else f"{ours[str(b)]:.3f}"

    return [
        "- ahead of the best Kernel Tuner strategy at every budget on average: "
        + ("yes" if not behind else "no (not at " + ", ".join(map(str, behind)) + ")"),
        f"- fraction of the optimum within 10 evaluations: {at(10)} (goal 0.90)",
        f"- fraction of the optimum within 100 evaluations: {at(100)} (goal 0.97)",
        f"- the mean curve rises at every budget step: {'yes' if rising else 'no'}",
    ]


def _with_range(means: dict[str, Any], budget: int) -> str:
    """`mean [low – high]` over seeds, or the mean alone with one seed (or no range kept)."""
    cell = f"{means[str(budget)]:.3f}"
    spread = (means.get("range") or {}).get(str(budget))
    if spread is None or spread[0] == spread[1] == means[str(budget)]:
        return cell
    return f"{cell} [{spread[0]:.3f} – {spread[1]:.3f}]"


def markdown(result: dict[str, Any]) -> str:
    budgets = _budgets(result)
    settings = result["settings"]
    head = " | ".join(f"{b} evals" for b in budgets)
    lines = [
        "# bench tuners: tunemem's Kernel Tuner strategy against Kernel Tuner's own",
        "",
        f"Command: `{result['command']}`  ",
        f"Machine: {result['machine']['cpu']}, {result['machine']['cores']} cores; "
        f"wall {result['wall_s']} s.  ",
        f"Seeds: {settings['seeds']}; suggestions per round k = {settings['k']}; source runs of "
        f"{settings['source_budget']} evaluations.  ",
        f"{memory_held_line(result.get('memory_held') or held(settings))}  ",
        f"Failed configurations: {settings['failed_configurations']}.  ",
        f"Score: {settings['score']}.",
        "",
        "## Mean over tasks: fraction of the optimum",
        "",
        f"| strategy | {head} | evals to 90 % | evals to 95 % | score |",
        "|" + "---|" * (len(budgets) + 4),
    ]
    for arm, means in result["summary"].items():
        cells = " | ".join(_with_range(means, b) for b in budgets)
        if arm == "random_exact":
            lines.append(f"| random (exact expectation) | {cells} | | | |")
            continue
        lines.append(
            f"| {arm} | {cells} | {_evals(means['evals_to_90'])} ({means['tasks_reaching_90']})"
            f" | {_evals(means['evals_to_95'])} ({means['tasks_reaching_95']}) "
            f"| {means['score']:.3f} |"
        )
    lines += [
        "",
        "Fractions: the mean over tasks and seeds; with more than one seed, in brackets the "
        "lowest and highest over seeds of the mean over tasks (each seed one whole run).  ",
        "Evaluations to 90 % / 95 %: the mean over tasks of the median over seeds, '-' when "
        "some task does not reach it within the largest budget; in brackets the tasks that "
        "do.",
        "",
        "## Goals",
        "",
        *goals(result),
        "",
        "## Per task (mean ± std over seeds)",
        "",
        f"| task | strategy | {head} | to 90 % | to 95 % | score |",
        "|" + "---|" * (len(budgets) + 5),
    ]
    for name, task in result["tasks"].items():
        for arm, s in task["arms"].items():
            cells = " | ".join(
                f"{s['fraction_at'][str(b)]['mean']:.3f} ± {s['fraction_at'][str(b)]['std']:.3f}"
                for b in budgets
            )
            hits = [
                _evals(s["evals_to"][level]["median"])
                + f" ({s['evals_to'][level]['reached']}/{s['evals_to'][level]['of']})"
                for level in ("90", "95")
            ]
            lines.append(f"| {name} | {arm} | {cells} | {hits[0]} | {hits[1]} | {s['score']:.3f} |")
    if result.get("warnings"):
        lines += ["", "Warnings from the strategy:", ""]
        lines += [f"- {w}" for w in result["warnings"]]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    """Mean fraction of the optimum per budget, one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = _budgets(result)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for arm, means in result["summary"].items():
        label = "random (exact)" if arm == "random_exact" else arm
        style: dict[str, Any] = {"alpha": 0.8}
        if arm == "tunemem":
            style = {"linewidth": 2.5, "color": "black"}
        elif arm == "random_exact":
            style = {"linestyle": "--", "color": "grey"}
        ax.plot(budgets, [means[str(b)] for b in budgets], marker="o", label=label, **style)
    ax.set_xscale("log")
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel("evaluations (max_fevals)")
    ax.set_ylabel("fraction of the optimum (mean over tasks)")
    ax.set_title("Kernel Tuner simulation mode: " + ", ".join(result["tasks"])[:80])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
