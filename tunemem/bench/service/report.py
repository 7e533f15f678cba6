"""The Markdown of `tunemem bench service`: runs, floor, profile, memory, goals."""

from __future__ import annotations

from typing import Any

from tunemem.bench.common.markdown import table
from tunemem.bench.common.results import memory_held_line

# Issue 21's goals for the embedded default at 100k lessons (MiniLM, 2 cores).
GOALS = {
    "retrieve p50 <= 12 ms at concurrency 1": ("closed", 1, "retrieve_ms", "p50", 12.0),
    "retrieve p99 <= 30 ms at concurrency 1": ("closed", 1, "retrieve_ms", "p99", 30.0),
    "report p99 <= 15 ms at concurrency 1": ("closed", 1, "report_ms", "p99", 15.0),
}


def _p(stats: dict[str, Any]) -> str:
    if not stats.get("n"):
        return "-"
    return f"{stats['p50']} / {stats['p95']} / {stats['p99']}"


def _load(run: dict[str, Any]) -> str:
    return " → ".join(str(v) for v in run["load_average_1min"])


def _loop(run: dict[str, Any]) -> str:
    if run["mode"] == "open":
        return f"open {run['rate']}/s ({run['concurrency']} conns)"
    return f"closed c={run['concurrency']}"


def _find(case: dict[str, Any], mode: str, concurrency: int) -> dict[str, Any] | None:
    return next(
        (r for r in case["runs"] if r["mode"] == mode and r["concurrency"] == concurrency), None
    )


def goals(case: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(goal, measured, met) for one case."""
    rows = []
    for label, (mode, concurrency, endpoint, cut, limit) in GOALS.items():
        run = _find(case, mode, concurrency)
        if run is None or not run[endpoint].get("n"):
            continue
        value = run[endpoint][cut]
        rows.append((label, f"{value} ms", value <= limit))
    floor = case["floor"]
    for label, key, limit in (
        ("fresh-query embedding p50 <= 4 ms alone (every core)", "embed_ms", 4.0),
        ("fresh-query embedding p50 <= 8 ms on one core", "embed_one_core_ms", 8.0),
    ):
        if floor.get(key, {}).get("n"):
            rows.append((label, f"{floor[key]['p50']} ms", floor[key]["p50"] <= limit))
    run = _find(case, "closed", 32)
    if run is not None:
        met = run["pairs_per_s"] >= 120 and not run["errors"]
        errors = sum(run["errors"].values())
        rows.append(
            (
                ">= 120 pairs/s at concurrency 32, no errors",
                f"{run['pairs_per_s']}/s, {errors} errors",
                met,
            )
        )
    one, eight = _find(case, "closed", 1), _find(case, "closed", 8)
    if one is not None and eight is not None and one["pairs_per_s"]:
        ratio = eight["pairs_per_s"] / one["pairs_per_s"]
        rows.append(("pairs/s at concurrency 8 >= 3x at 1", f"{ratio:.2f}x", ratio >= 3.0))
    memory = case["server_memory"]
    if memory.get("processes") == 1:
        rows.append(
            (
                "peak service RSS <= 500 MB",
                f"{memory['peak_rss_mb']:,} MB",
                memory["peak_rss_mb"] <= 500,
            )
        )
    return rows


def _loop_name(run: dict[str, Any]) -> str:
    """A run's name that is the same in every repetition (an open loop's rate is not)."""
    if run["mode"] == "open":
        return f"open {run['rate_fraction_of_closed_max']} of the closed max"
    return f"closed c={run['concurrency']}"


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The figures of each case under names that stay the same from one repetition to the
    next, so that `bench.common.seeds` gives their mean and range over repetitions: per loop
    the retrieve and report p50 / p99 (ms), pairs a second and errors; the server's peak RSS;
    the floor; and the machine's load average (1 min) when the bench started and ended."""
    out: dict[str, Any] = {}
    for case in result["cases"]:
        figures: dict[str, Any] = {}
        for run in case["runs"]:
            figures[_loop_name(run)] = {
                "retrieve_p50_ms": run["retrieve_ms"].get("p50"),
                "retrieve_p99_ms": run["retrieve_ms"].get("p99"),
                "report_p50_ms": run["report_ms"].get("p50"),
                "report_p99_ms": run["report_ms"].get("p99"),
                "pairs_per_s": run["pairs_per_s"],
                "errors": sum(run["errors"].values()),
                **({"rate": run["rate"]} if run["mode"] == "open" else {}),
            }
        figures["peak_rss_mb"] = case["server_memory"].get("peak_rss_mb")
        floor = case["floor"].get("embed_plus_query_ms", {})
        figures["floor_embed_plus_query_p50_ms"] = floor.get("p50")
        out[f"{case['mode']} {case['lessons']}"] = figures
    out["load_average_1min"] = result["load_average_1min"]
    return out


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# Service benchmark",
        "",
        *([memory_held_line(result["memory_held"]), ""] if "memory_held" in result else []),
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB. The machine may be "
        "shared with other work, so the load average before and after each run is listed "
        "beside it (a quiet machine with this bench running shows about 1-2.5)"
        + (
            f"; load average (1 min) when the bench started {load['start']:.2f}, when it "
            f"ended {load['end']:.2f}. "
            if (load := result.get("load_average_1min"))
            else ". "
        )
        + f"Command: `{result['command']}` (code {result.get('code_version')}).",
        "",
        f"Data: {result['synthetic']} Embedder: {result['settings']['embedder']}"
        + (
            f"; {result['settings']['distinct']:,} lessons per store carry their own MiniLM "
            "vector, the others a jittered copy of one (tunemem/bench/service/synthetic_store.py)."
            if result["settings"]["distinct"]
            else "; every lesson carries its own vector."
        ),
        "",
        "Each pair is POST /v1/retrieve with a query text no earlier request had (so every "
        "query is embedded), then POST /v1/outcomes reporting an outcome for the returned "
        "lessons. The server is `python -m tunemem serve` in its own process; "
        "the "
        f"load comes from `{result['settings']['driver']}`. Closed loop: c connections, each "
        "sending its next pair on the last answer. Open loop: pairs start on a Poisson schedule "
        "at the given rate; latency counts from the scheduled start. "
        f"{result['settings']['duration']} s measured per run after "
        f"{result['settings']['warmup']} s unmeasured. Server mode: {result['server_mode']}.",
        "",
        "| lessons | mode | loop | retrieve p50/p95/p99 ms | report p50/p95/p99 ms "
        "| pairs/s | errors | driver CPU s | load 1 min |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in result["cases"]:
        for run in case["runs"]:
            errors = sum(run["errors"].values())
            lines.append(
                f"| {case['lessons']:,} | {case['mode']} ({case['workers']} worker"
                f"{'s' if case['workers'] > 1 else ''}) | {_loop(run)} | {_p(run['retrieve_ms'])} "
                f"| {_p(run['report_ms'])} | {run['pairs_per_s']} | {errors} "
                f"| {run['driver_cpu_s']} | {_load(run)} |"
            )
    lines += [
        "",
        "## Floor, measured in the same run",
        "",
        "The floor is what one retrieve cannot avoid: embedding its (fresh) query text with the "
        "bare model and one query of the vector index for the candidates (the same call, the "
        "same size), timed back to back in the bench process on the same store before the "
        "server starts. Overhead = retrieve at concurrency 1 minus the floor. Beside it, in the "
        "same run, the same texts alternately: the model on one core, and (MiniLM on ONNX "
        "Runtime) the same model on PyTorch, every core.",
        "",
        "| lessons | mode | embed p50/p95/p99 ms | index query p50/p95/p99 ms "
        "| embed + query p50/p99 ms | retrieve c=1 p50/p99 ms | overhead p50 ms "
        "| embed on one core p50/p95/p99 ms | PyTorch embed p50/p95/p99 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in result["cases"]:
        floor = case["floor"]
        both = floor["embed_plus_query_ms"]
        run = _find(case, "closed", 1)
        retrieve = run["retrieve_ms"] if run else {}
        overhead = round(retrieve["p50"] - both["p50"], 2) if retrieve.get("n") else "-"
        lines.append(
            f"| {case['lessons']:,} | {case['mode']} | {_p(floor['embed_ms'])} "
            f"| {_p(floor['index_query_ms'])} | {both['p50']} / {both['p99']} "
            f"| {retrieve.get('p50', '-')} / {retrieve.get('p99', '-')} | {overhead} "
            f"| {_p(floor.get('embed_one_core_ms', {}))} | {_p(floor.get('torch_embed_ms', {}))} |"
        )
    lines += ["", "## Where a retrieve's time goes (py-spy, concurrency 1)", ""]
    for case in result["cases"]:
        profile = case["profile"]
        lines.append(f"{case['lessons']:,} lessons, {case['mode']}:")
        lines.append("")
        if not profile.get("available"):
            lines += [f"not profiled: {profile.get('reason')}", ""]
            continue
        lines += [
            f"{profile['busy_samples']:,} busy samples at {profile['rate_hz']} Hz (threads "
            "waiting and uvloop's C loop left out).",
            "",
            "| area | operation | share of busy samples |",
            "|---|---|---|",
        ]
        lines += _share_rows(profile["rows"])
    lines += _gil_section(result)
    lines += [
        "## Memory and build",
        "",
        "| lessons | mode | server processes | server peak RSS MB (sum) | build s | lessons/s "
        "| embedded lessons (cache hits) |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in result["cases"]:
        mem, build = case["server_memory"], case["build"]
        lines.append(
            f"| {case['lessons']:,} | {case['mode']} | {mem['processes']} | "
            f"{mem['peak_rss_mb']:,} | {build['build_s']} | {build['lessons_per_s']:,} "
            f"| {build['embedded_lessons']:,} ({build.get('embedding_cache_hits')}) |"
        )
    met_rows = [
        (f"{case['lessons']:,}", case["mode"], label, measured, "yes" if met else "no")
        for case in result["cases"]
        for label, measured, met in goals(case)
    ]
    lines += ["", "## Goals (issue 21)", ""]
    lines += table(("lessons", "mode", "goal", "measured", "met"), met_rows, compact=True)
    return "\n".join(lines) + "\n"


def _gil_section(result: dict[str, Any]) -> list[str]:
    """Who holds the interpreter lock under concurrency (py-spy --gil)."""
    lines = ["## Who holds the interpreter lock under concurrency (py-spy --gil)", ""]
    for case in result["cases"]:
        profile = case.get("gil_profile") or {}
        lines.append(f"{case['lessons']:,} lessons, {case['mode']}:")
        lines.append("")
        if not profile.get("available"):
            lines += [f"not profiled: {profile.get('reason', 'not measured')}", ""]
            continue
        lines += [
            f"Concurrency {profile['concurrency']}: a thread held the lock in "
            f"{100 * profile['busy_share']:.0f}% of the samples ({profile['busy_samples']:,} "
            f"at {profile['rate_hz']} Hz); near 100% means the lock serialises requests.",
            "",
            "| area | operation | share of lock-holding samples |",
            "|---|---|---|",
        ]
        lines += _share_rows(profile["rows"])
    return lines


def _share_rows(rows: list[dict[str, Any]]) -> list[str]:
    """A profile's table rows: each area and operation of at least 1%, then the rest summed."""
    lines = [
        f"| {row['area']} | {row['operation']} | {100 * row['share']:.1f}% |"
        for row in rows
        if row["share"] >= 0.01
    ]
    rest = sum(row["share"] for row in rows if row["share"] < 0.01)
    return [*lines, f"| (rows under 1%) | | {100 * rest:.1f}% |", ""]
