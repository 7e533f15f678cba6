"""One result from runs of the same benchmark with different seeds: every figure of their
summaries as the mean over the runs and its range (lowest, highest).

`python -m tunemem.bench.common.seeds --name replay --out DIR RUN0.json RUN1.json RUN2.json`
reads results written by `write_result` (one seed each, or several), checks they ran the same
code with the same memory, and writes `DIR/NAME.json` and `.md`: `summary` mirrors the runs'
summaries with each number replaced by `{"mean", "low", "high"}`, `runs` keeps each run's own
summary and command. Figures that are not numbers in every run (a name, a failure) are left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from tunemem.bench.common.results import check_provenance, provenance, write_result


def combine_figures(summaries: list[Any]) -> Any:
    """The mean and range of every number found at the same place in every summary."""
    first = summaries[0]
    if isinstance(first, dict):
        shared = [k for k in first if all(isinstance(s, dict) and k in s for s in summaries)]
        out = {k: combine_figures([s[k] for s in summaries]) for k in shared}
        return {k: v for k, v in out.items() if v is not None and v != {}}
    numbers = [s for s in summaries if isinstance(s, int | float) and not isinstance(s, bool)]
    if len(numbers) != len(summaries):
        return None
    return {"mean": statistics.fmean(numbers), "low": min(numbers), "high": max(numbers)}


def combine_runs(runs: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """The combined result of `runs` (see the module); `ValueError` when they cannot be one."""
    for run in runs:
        check_provenance(run)
    for field in ("code_version", "memory_held", "measurement"):
        if len({json.dumps(r[field], sort_keys=True) for r in runs}) > 1:
            raise ValueError(f"the runs differ in {field}: they cannot be one result")
    seeds = [s for r in runs for s in r["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the runs repeat seeds: {seeds}")
    if any("summary" not in r for r in runs):
        raise ValueError("every run must have a summary")
    result = {
        **provenance(command, sorted(seeds), runs[0]["measurement"]),
        "code_version": runs[0]["code_version"],  # the runs' code, not the combining's
        "memory_held": runs[0]["memory_held"],
        "benchmark": runs[0].get("benchmark"),
        "summary": combine_figures([r["summary"] for r in runs]),
        "runs": [
            {"command": r["command"], "seeds": r["seeds"], "summary": r["summary"]} for r in runs
        ],
    }
    return result


def _cell(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) and abs(value) < 100 else f"{value:,.1f}"


def markdown(result: dict[str, Any], title: str) -> str:
    """Every combined figure, one row each: its path in the summary, mean, lowest, highest."""
    lines = [
        f"# {title}: mean and range over seeds {', '.join(map(str, result['seeds']))}",
        "",
        "Each figure of the runs' summaries: the mean over the runs, then the lowest and the "
        "highest run. The runs' own commands are in the JSON (`runs`).",
        "",
        "| figure | mean | lowest | highest |",
        "| --- | ---: | ---: | ---: |",
    ]

    def walk(node: dict[str, Any], path: list[str]) -> None:
        if set(node) == {"mean", "low", "high"}:
            cells = " | ".join(_cell(node[k]) for k in ("mean", "low", "high"))
            lines.append(f"| {' / '.join(path)} | {cells} |")
            return
        for key, value in node.items():
            walk(value, [*path, key])

    walk(result["summary"], [])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+", help="result JSONs, one or more seeds each")
    p.add_argument("--name", required=True, help="file stem of the combined result")
    p.add_argument("--out", type=Path, required=True, help="folder to write it in")
    p.add_argument("--title", default="Benchmark", help="the Markdown's title")
    args = p.parse_args(argv)
    words = sys.argv[1:] if argv is None else argv
    try:
        runs = [json.loads(path.read_text()) for path in args.runs]
        result = combine_runs(runs, "python -m tunemem.bench.common.seeds " + " ".join(words))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_result(args.out, args.name, result, markdown(result, args.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
