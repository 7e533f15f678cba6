"""`tunemem bench ...`: the benchmarks in `bench/`, which write a JSON
result and a Markdown table under bench/results/, naming the machine they ran on. Only the
CLI composes them; this module parses the options and calls them."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tunemem.bench.common.paths import RESULTS_OF, SHARED_DATA
from tunemem.cli.common import console, err

bench_app = typer.Typer(
    help="Benchmarks: ingest, service, learning, tuners, kernels, live, autotune, moe.",
    no_args_is_help=True,
)

DEFAULT_SHARED = SHARED_DATA


@bench_app.command("ingest")
def bench_ingest(
    data: Annotated[Path, typer.Option(help="folder of tuning data")] = DEFAULT_SHARED,
    out: Annotated[Path, typer.Option(help="results folder")] = RESULTS_OF["ingest"],
    index: Annotated[str, typer.Option(help="vector index: chroma or memory")] = "chroma",
    embedder: Annotated[
        list[str], typer.Option(help="embedders to compare, side by side (minilm, hashing)")
    ] = ["minilm", "hashing"],  # noqa: B006
) -> None:
    """Ingest a folder into an empty store once per embedder; report attempts/s, lessons/s."""
    from tunemem.bench.ingest.run import run_ingest_bench

    if not data.exists():
        err.print(f"error: {data} not found")
        raise typer.Exit(2)
    run_ingest_bench(data, out, index, list(embedder))


@bench_app.command("learning")
def bench_learning(
    caches: Annotated[
        list[Path] | None,
        typer.Option(help="folders or files of Kernel Tuner caches: the tasks (repeatable)"),
    ] = None,
    protocol: Annotated[str, typer.Option(help="loo (leave-one-chip-out) or lifelong")] = "loo",
    warmup: Annotated[
        list[Path] | None,
        typer.Option(help="lifelong: caches whose tasks run first, not scored (repeatable)"),
    ] = None,
    sources: Annotated[
        list[Path] | None, typer.Option(help="loo: extra caches used only as sources")
    ] = None,
    seeds: Annotated[int, typer.Option(help="stream orders (lifelong) or source orders")] = 5,
    budget: Annotated[int, typer.Option(help="attempts per task (1 to 100)", min=1, max=100)] = 20,
    arms: Annotated[
        list[str] | None,
        typer.Option(
            help="arms to run (repeatable): random, similarity, value, value_backoff,"
            " generalised, trust, exemplars, default (the service's search with its"
            " performance model); all by default"
        ),
    ] = None,
    embedder: Annotated[str, typer.Option(help="service embedder: minilm or hashing")] = "minilm",
    note: Annotated[str, typer.Option(help="a line the Markdown report carries")] = "",
    out: Annotated[Path, typer.Option(help="JSON result path (.md and .png beside it)")] = (
        RESULTS_OF["learning"] / "learning.json"
    ),
    quick: Annotated[bool, typer.Option("--quick", help="tiny run for smoke tests")] = False,
    noise: Annotated[
        float,
        typer.Option(
            "--noise", help="log-normal sigma on every time that enters the memory (0 to 3)"
        ),
    ] = 0.0,
    mislabel: Annotated[
        float,
        typer.Option(
            "--mislabel",
            help="fraction of ingested runs labelled with another chip of their backend (0-1)",
        ),
    ] = 0.0,
    partial: Annotated[
        float,
        typer.Option(help="fraction of runs also uploaded as partial runs of 10 evaluations"),
    ] = 0.0,
    replayed: Annotated[
        float,
        typer.Option(help="fraction of runs also uploaded as a replay under another chip's name"),
    ] = 0.0,
    single_timings: Annotated[
        float,
        typer.Option(help="share of the agent's evaluations reported as one noisy timing"),
    ] = 0.0,
    timing_noise: Annotated[
        float | None,
        typer.Option(help="log-normal sigma of a single timing (0 to 3; default 0.2)"),
    ] = None,
) -> None:
    """Learning benchmark on recorded search spaces (replay): loo or lifelong protocol."""
    from tunemem.bench.learning.dirty import Dirt
    from tunemem.bench.learning.noise import MemoryNoise
    from tunemem.bench.learning.run import ARMS, PROTOCOLS, run_learning_bench
    from tunemem.bench.learning.tasks import TaskDataError

    try:
        sigma = {} if timing_noise is None else {"timing_sigma": timing_noise}
        dirt = Dirt(partial=partial, replayed=replayed, single_timings=single_timings, **sigma)
        memory_noise = MemoryNoise(sigma=noise, mislabel=mislabel, dirt=dirt)
    except ValueError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2) from exc

    if protocol not in PROTOCOLS:
        err.print(f"error: unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
        raise typer.Exit(2)
    unknown = [a for a in arms or [] if a not in ARMS]
    if unknown:
        err.print(f"error: unknown arms {', '.join(unknown)}; valid: {', '.join(ARMS)}")
        raise typer.Exit(2)
    try:
        report = run_learning_bench(
            caches=list(caches or [DEFAULT_SHARED / "kerneltuner"]),
            protocol=protocol,
            warmup=list(warmup or []),
            sources=list(sources or []),
            seeds=seeds,
            budget=budget,
            out=out,
            quick=quick,
            arms=list(arms) if arms else None,
            note=note,
            embedder=embedder,
            noise=memory_noise,
        )
    except TaskDataError as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2) from exc
    print_learning_summary(report, out)


def print_learning_summary(report: dict[str, Any], out: Path) -> None:
    """Each arm's mean fraction of the optimum at the budgets measured, its ranking quality and
    first-attempt feasibility; then where the full results are."""
    summary = report.get("summary") or {}
    columns = [
        c for c in ("1", "5", "10", "20", "top_1", "top_3") if any(c in s for s in summary.values())
    ]
    table = Table(
        "arm",
        *(f"@{c}" if c.isdigit() else c for c in columns),
        "1st feasible",
        title=f"learning benchmark, {report.get('protocol')}: mean fraction of the optimum",
    )
    for arm, means in summary.items():
        cells = [f"{means[c]:.3f}" if means.get(c) is not None else "–" for c in columns]
        feasible = means.get("first_attempt_feasible")
        table.add_row(arm, *cells, f"{feasible:.2f}" if feasible is not None else "–")
    console.print(table)
    console.print(
        f"results: {out} (JSON), {out.with_suffix('.md')} (tables per task and family), "
        f"{out.with_suffix('.png')} (plot); {report.get('elapsed_s')} s"
    )


def _register_tuners_bench() -> None:
    from tunemem.cli.bench_tuners import bench_tuners

    bench_app.command(
        "tuners",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )(bench_tuners)


_register_tuners_bench()


def _register_service_bench() -> None:
    from tunemem.bench.service.run import bench_service

    bench_app.command("service")(bench_service)


_register_service_bench()


# The benchmarks `python -m tunemem.bench.<name>` also runs: their options are declared once, in
# the module's parser, and the command hands its arguments to it (`--help` prints that parser's).
FORWARDED = {
    "kernels": (
        "tunemem.bench.kernels.run",
        "Triton kernels vs torch eager/compile and the hardware limit (needs an NVIDIA GPU).",
    ),
    "live": (
        "tunemem.bench.live.run",
        "The agent tunes held-out kernel shapes live on the GPU with memory of the other shapes"
        " (needs an NVIDIA GPU; not part of CI); writes live.json, live.md and trajectories.",
    ),
    "autotune": (
        "tunemem.bench.autotune.command",
        "The full triton.autotune against the memory's drop-in on held-out kernel shapes:"
        " autotune wall seconds and the chosen configurations' speed (needs an NVIDIA GPU, or"
        " --device cpu).",
    ),
    "moe": (
        "tunemem.bench.moe.run",
        "`tunemem tune moe` replayed on recorded H200 timings against the best of 384 sampled,"
        " copying the nearest GPU's shipped file and vLLM's default (record with"
        " kernels.moe_sweep).",
    ),
}


def _forward(name: str, module: str, summary: str) -> None:
    def command(ctx: typer.Context) -> None:
        main = importlib.import_module(module).main
        try:
            code = main(list(ctx.args))
        except RuntimeError as exc:  # no GPU visible, or an arm's process failed
            err.print(f"error: {exc}")
            raise typer.Exit(1) from exc
        if code:
            raise typer.Exit(code)

    command.__doc__ = f"{summary.rstrip('.')} (--help: options)."
    bench_app.command(
        name,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )(command)


for _name, (_module, _summary) in FORWARDED.items():
    _forward(_name, _module, _summary)
