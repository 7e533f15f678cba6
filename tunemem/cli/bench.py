"""`tunemem bench ...`: the benchmarks in `bench/`, which write a JSON
result and a Markdown table under bench/results/, naming the machine they ran on. Only the
CLI composes them; this module parses the options and calls them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tunemem.bench.common.paths import RESULTS_OF, SHARED_DATA, SWEEPS
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


@bench_app.command("kernels")
def bench_kernels(
    out: Annotated[Path, typer.Option(help="results folder")] = RESULTS_OF["kernels"],
    quick: Annotated[bool, typer.Option("--quick")] = False,
) -> None:
    """Triton kernels vs torch eager/compile and the hardware limit (needs an NVIDIA GPU)."""
    from tunemem.bench.kernels.run import run_kernel_bench

    run_kernel_bench(out, quick=quick)


@bench_app.command("live")
def bench_live(
    tasks: Annotated[
        str, typer.Option(help="kernels, comma-separated")
    ] = "softmax,rmsnorm,gemm,decode_attention,attention",
    budget: Annotated[int, typer.Option(help="live attempts per run")] = 10,
    arms: Annotated[
        str, typer.Option(help="random, similarity, value_backoff, default (the agent on suggest)")
    ] = "random,similarity,value_backoff,default",
    settings: Annotated[str, typer.Option(help="same_task, all_tasks")] = "same_task,all_tasks",
    shapes: Annotated[int, typer.Option(help="held-out shapes per task (0: all)")] = 0,
    sweeps: Annotated[Path, typer.Option(help="recorded sweeps")] = SWEEPS,
    trajectories: Annotated[Path, typer.Option(help="where live-<task>.jsonl go")] = SWEEPS,
    out: Annotated[Path, typer.Option(help="where live.json and live.md go")] = RESULTS_OF["live"],
    budget_s: Annotated[float, typer.Option(help="wall-clock budget, seconds")] = 540.0,
    workers: Annotated[int, typer.Option(help="memories prepared at once")] = 6,
    seed: Annotated[int, typer.Option(help="the agent's and the search's seed")] = 0,
    embedder: Annotated[
        str, typer.Option(help="the memories' embedder: minilm (the default) or hashing")
    ] = "minilm",
    warmup_ms: Annotated[float, typer.Option()] = 5.0,
    rep_ms: Annotated[float, typer.Option()] = 30.0,
    resweep: Annotated[
        bool, typer.Option("--resweep/--no-resweep", help="re-run each held-out shape's sweep")
    ] = True,
    quiet_timing: Annotated[
        bool,
        typer.Option(help="prepare each shape's memories before timing it, none while it runs"),
    ] = False,
    merge: Annotated[
        list[Path] | None, typer.Option(help="merge these live.json files into --out instead")
    ] = None,
) -> None:
    """The agent tunes held-out kernel shapes live on the GPU with memory of the other shapes
    (needs an NVIDIA GPU; not part of CI); writes live.json, live.md and trajectories."""
    from tunemem.bench.live.run import main as live_main

    argv = [
        *("--tasks", tasks, "--budget", str(budget), "--arms", arms, "--settings", settings),
        *("--shapes", str(shapes), "--sweeps", str(sweeps), "--trajectories", str(trajectories)),
        *("--out", str(out), "--budget-s", str(budget_s), "--workers", str(workers)),
        *("--seed", str(seed), "--embedder", embedder),
        *("--warmup-ms", str(warmup_ms), "--rep-ms", str(rep_ms)),
        *([] if resweep else ["--no-resweep"]),
        *(["--quiet-timing"] if quiet_timing else []),
        *(["--merge", *map(str, merge)] if merge else []),
    ]
    try:
        code = live_main(argv)
    except RuntimeError as exc:  # no GPU visible
        err.print(f"error: {exc}")
        raise typer.Exit(1) from exc
    if code:
        raise typer.Exit(code)


@bench_app.command("autotune")
def bench_autotune(
    tasks: Annotated[
        str, typer.Option(help="kernels, comma-separated")
    ] = "softmax,rmsnorm,decode_attention,attention,gemm",
    shapes: Annotated[int, typer.Option(help="shapes per task (0: all)")] = 0,
    top_k: Annotated[float, typer.Option(help="configurations the drop-in times")] = 5,
    explore: Annotated[float, typer.Option(help="the drop-in's exploration share")] = 0.5,
    rounds: Annotated[int, typer.Option(help="interleaved re-timing rounds")] = 5,
    sweeps: Annotated[Path, typer.Option(help="recorded sweeps")] = SWEEPS,
    trajectories: Annotated[Path, typer.Option(help="where autotune-<task>.jsonl go")] = SWEEPS,
    out: Annotated[Path, typer.Option(help="where autotune.json and .md go")] = RESULTS_OF[
        "autotune"
    ],
    name: Annotated[str, typer.Option(help="result files' name")] = "autotune",
    budget_s: Annotated[float, typer.Option(help="wall-clock budget, seconds")] = 540.0,
    workers: Annotated[int, typer.Option(help="memories prepared at once")] = 8,
    device: Annotated[str, typer.Option(help="cuda, or cpu (Triton interpreter)")] = "cuda",
    full_only: Annotated[bool, typer.Option(help="run only the full autotune arm")] = False,
    cold: Annotated[
        bool, typer.Option(help="from an empty memory, the shapes in seeded orders (--orders)")
    ] = False,
    orders: Annotated[str, typer.Option(help="--cold key orders, comma-separated seeds")] = "0",
    full_from: Annotated[
        Path | None, typer.Option(help="the full arm's results from a --full-only run")
    ] = None,
    options: Annotated[
        str | None, typer.Option(help='the drop-in\'s ranking options, JSON ({"lam": 0.0})')
    ] = None,
) -> None:
    """The full triton.autotune against the memory's drop-in on held-out kernel shapes: autotune
    wall seconds and the chosen configurations' speed (needs an NVIDIA GPU, or --device cpu)."""
    from tunemem.bench.autotune.command import main as autotune_main

    if device not in ("cuda", "cpu"):
        err.print(f"error: --device must be cuda or cpu, not {device!r}")
        raise typer.Exit(2)
    if cold and not all(o.strip().isdigit() for o in orders.split(",")):
        err.print(f"error: --orders takes comma-separated seeds (0,1,2), not {orders!r}")
        raise typer.Exit(2)
    argv = [
        *("--tasks", tasks, "--shapes", str(shapes), "--top-k", str(top_k)),
        *("--explore", str(explore), "--rounds", str(rounds), "--sweeps", str(sweeps)),
        *("--trajectories", str(trajectories), "--out", str(out), "--name", name),
        *("--budget-s", str(budget_s), "--workers", str(workers), "--device", device),
        *(["--full-only"] if full_only else []),
        *(["--cold", "--orders", *(o.strip() for o in orders.split(","))] if cold else []),
        *(["--full-from", str(full_from)] if full_from else []),
        *(["--options", options] if options else []),
    ]
    try:
        code = autotune_main(argv)
    except RuntimeError as exc:  # no GPU visible, or an arm's process failed
        err.print(f"error: {exc}")
        raise typer.Exit(1) from exc
    if code:
        raise typer.Exit(code)


@bench_app.command("moe")
def bench_moe(
    landscape: Annotated[Path, typer.Option(help="recorded H200 timings")] = (
        RESULTS_OF["moe"] / "h200-landscape"
    ),
    shipped: Annotated[Path, typer.Option(help="vLLM's shipped files: the memory")] = (
        DEFAULT_SHARED / "vllm_fused_moe"
    ),
    out: Annotated[Path, typer.Option(help="results folder")] = RESULTS_OF["moe"],
    budget: Annotated[int, typer.Option(help="timed configurations per batch size")] = 32,
    seed: Annotated[int, typer.Option(help="the tool's seed")] = 0,
    cases: Annotated[str | None, typer.Option(help="cases, comma-separated (default all)")] = None,
) -> None:
    """`tunemem tune moe` replayed on recorded H200 timings against the best of 384 sampled,
    copying the nearest GPU's shipped file and vLLM's default (record with kernels.moe_sweep)."""
    from tunemem.bench.moe.run import main as moe_main

    if not shipped.is_dir():
        err.print(f"error: no folder of vLLM's shipped files at {shipped}")
        raise typer.Exit(2)
    argv = [
        *("--landscape", str(landscape), "--shipped", str(shipped), "--out", str(out)),
        *("--budget", str(budget), "--seed", str(seed)),
    ]
    if cases:
        argv += ["--cases", *[c for c in cases.split(",") if c]]
    try:
        code = moe_main(argv)
    except (FileNotFoundError, ValueError) as exc:
        err.print(f"error: {exc}")
        raise typer.Exit(2) from exc
    if code:
        raise typer.Exit(code)
