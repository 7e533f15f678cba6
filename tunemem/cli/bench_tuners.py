"""`tunemem bench tuners`: the Kernel Tuner strategy against Kernel Tuner's own strategies.

Its options take several values each, as the benchmark is usually called (`--budgets 5 10 20
50 100`, `--caches DIR DIR`), which Typer options cannot; argparse parses them."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import typer

from tunemem.bench.common.paths import KERNELTUNER_CACHES, RESULTS_OF
from tunemem.cli.common import err

DEFAULT_CACHES = KERNELTUNER_CACHES
DEVELOPMENT = ("convolution", "dedispersion")  # the development caches (the default tasks)


def parser() -> argparse.ArgumentParser:
    from tunemem.bench.tuners.run import DEFAULT_BUDGETS, MEMORY_MODES
    from tunemem.bench.tuners.simulation import KT_STRATEGIES

    p = argparse.ArgumentParser(
        prog="tunemem bench tuners",
        description="tunemem's Kernel Tuner strategy (memory filled leave-one-chip-out) against "
        "Kernel Tuner's strategies, in Kernel Tuner's simulation mode.",
    )
    p.add_argument(
        "--caches", nargs="+", type=Path, default=None, help="folders or files: the tasks"
    )
    p.add_argument(
        "--sources", nargs="+", type=Path, default=[], help="caches used only to fill the memory"
    )
    p.add_argument("--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS))
    p.add_argument("--seeds", type=int, default=3, help="seeds per arm and budget")
    p.add_argument(
        "--strategies",
        nargs="*",
        default=list(KT_STRATEGIES),
        help=f"Kernel Tuner strategies (default: {' '.join(KT_STRATEGIES)})",
    )
    p.add_argument("--k", type=int, default=5, help="suggestions per round (tunemem)")
    p.add_argument(
        "--source-budget",
        type=int,
        default=None,
        help="evaluations of each source run that fills the memory (default: largest budget)",
    )
    p.add_argument(
        "--memory",
        choices=MEMORY_MODES,
        default="caches",
        help="how the sources fill the memory: caches (tuned by the strategy, then their whole "
        "cache ingested), self-fed (only the strategy's own runs, --source-budget evaluations, "
        "uploaded with their outcomes), kt-runs (a Kernel Tuner strategy's runs, their cache "
        "files holding only what they evaluated, ingested)",
    )
    p.add_argument(
        "--source-strategy",
        choices=KT_STRATEGIES,
        default="genetic_algorithm",
        help="the Kernel Tuner strategy whose runs fill the memory with --memory kt-runs",
    )
    p.add_argument(
        "--out", type=Path, default=RESULTS_OF["tuners"] / "tuners.json", help="JSON result path"
    )
    p.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        help="instead of running: join results of disjoint task sets into --out",
    )
    return p


def bench_tuners(ctx: typer.Context) -> None:
    """Kernel Tuner simulation: tunemem's strategy against Kernel Tuner's (--help: options)."""
    from tunemem.bench.learning.tasks import TaskDataError
    from tunemem.bench.tuners.run import run_tuners_bench

    args = parser().parse_args(ctx.args)
    command = "tunemem bench tuners " + shlex.join(ctx.args)
    if args.merge:
        from tunemem.bench.tuners.run import merge_results

        try:
            merge_results(list(args.merge), args.out, command)
        except (OSError, ValueError, KeyError) as exc:
            err.print(f"error: cannot merge: {exc}")
            raise typer.Exit(2) from exc
        return
    if any(b < 1 for b in args.budgets) or args.seeds < 1 or not 1 <= args.k <= 100:
        err.print("error: budgets and seeds must be positive, k between 1 and 100")
        raise typer.Exit(2)
    try:
        run_tuners_bench(
            caches=list(
                args.caches or [DEFAULT_CACHES / "convolution", DEFAULT_CACHES / "dedispersion"]
            ),
            sources=list(args.sources),
            budgets=list(args.budgets),
            seeds=args.seeds,
            out=args.out,
            strategies=list(args.strategies),
            k=args.k,
            source_budget=args.source_budget,
            command=command,
            memory=args.memory,
            source_strategy=args.source_strategy,
        )
    except TaskDataError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2) from exc
