"""`tunemem agent run`: the LangGraph agent tuning one task on one chip against a server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from tunemem.agent_client.context import DEFAULT_PLATEAU
from tunemem.agent_client.models import MemoryAPIError
from tunemem.cli.common import ApiKeyOpt, console, fail

agent_app = typer.Typer(help="Run the LangGraph tuning agent.", no_args_is_help=True)


RUNNERS = ("replay", "cuda", "cpu")


@agent_app.command("run")
def agent_run(
    runner: Annotated[
        str, typer.Option(help="replay (a recorded cache), cuda (live on the GPU) or cpu")
    ] = "replay",
    task: Annotated[
        Path | None,
        typer.Option(help="replay: a Kernel Tuner cache file, or a folder of them"),
    ] = None,
    chip: Annotated[
        str | None, typer.Option(help="replay: chip to tune on (picks the file in a folder)")
    ] = None,
    kernel: Annotated[
        str | None,
        typer.Option(help="cuda/cpu: softmax, rmsnorm, gemm, attention or decode_attention"),
    ] = None,
    shape: Annotated[str | None, typer.Option(help="cuda/cpu: a declared shape name")] = None,
    dims: Annotated[
        str | None, typer.Option(help="cuda/cpu: explicit dimensions, e.g. rows=4096,cols=8192")
    ] = None,
    dtype: Annotated[str | None, typer.Option(help="cuda/cpu: bfloat16, float16, float32")] = None,
    space: Annotated[
        str | None, typer.Option(help="cuda/cpu: tuning (the pruned grid) or full")
    ] = None,
    budget: Annotated[int, typer.Option(help="most attempts")] = 20,
    url: Annotated[
        str | None, typer.Option("--url", help="memory service; omit to run without memory")
    ] = None,
    api_key: ApiKeyOpt = None,
    proposer: Annotated[
        str, typer.Option(help="suggest (the service's search), structured, llm or random")
    ] = "suggest",
    k: Annotated[int, typer.Option(help="lessons per retrieval")] = 3,
    seed: Annotated[int, typer.Option()] = 0,
    plateau: Annotated[
        int,
        typer.Option(help="stop after this many attempts without improvement; 0 runs the budget"),
    ] = DEFAULT_PLATEAU,
    run_id: Annotated[
        str | None, typer.Option(help="name the run (resume with the same id)")
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="SQLite checkpoint file for resuming")
    ] = None,
    trajectory: Annotated[
        Path | None, typer.Option(help="also write the run as a native trajectory (JSONL)")
    ] = None,
    llm_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint for --proposer llm")
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option(help="model name (TUNEMEM_LLM_MODEL); key: TUNEMEM_LLM_API_KEY")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Tune a recorded task (--runner replay --task) or a kernel live (--runner cuda|cpu
    --kernel --shape|--dims); prints each attempt, the lessons it used and their values."""
    from tunemem.agent_client.run import format_attempt
    from tunemem.cli.common import settings_for

    if runner not in RUNNERS:
        fail(f"unknown runner {runner!r}; valid: {', '.join(RUNNERS)}")
    settings = settings_for()
    show = None if as_json else _printer(format_attempt)
    common = {
        "proposer": proposer,
        "k": k,
        "seed": seed,
        "plateau": plateau,
        "run_id": run_id,
        "checkpoint": checkpoint,
        "api_key": api_key or settings.api_key,
        "on_attempt": show,
    }
    llm = {
        "url": llm_url or settings.llm_url,
        "model": llm_model or settings.llm_model,
        "api_key": settings.llm_api_key,
    }
    try:
        if runner == "replay":
            if task is None or kernel or shape or dims:
                fail("--runner replay takes --task CACHE (and --chip), not --kernel/--shape/--dims")
            if not task.exists():
                fail(f"no such task file or folder: {task}")
            from tunemem.agent_client.run import run_agent

            result = run_agent(
                url,
                task,
                chip,
                budget,
                llm_url=llm["url"],
                llm_model=llm["model"],
                llm_api_key=llm["api_key"],
                **common,  # type: ignore[arg-type]
            )
        else:
            result = _run_live(
                runner, task, kernel, shape, dims, dtype, space, url, budget, llm, **common
            )
    except typer.Exit:
        raise
    except (httpx.HTTPError, httpx.InvalidURL, MemoryAPIError) as exc:
        fail(_memory_problem(url, exc))
    except ValueError as exc:
        fail(str(exc))
    except RuntimeError as exc:  # no GPU, or the interpreter switched on too late
        fail(str(exc), code=1)
    if trajectory is not None and result.trajectory:
        from tunemem.ingest.records import TrajectoryRecord
        from tunemem.kernels.sweep import write_trajectories

        write_trajectories([TrajectoryRecord.from_dict(result.trajectory)], trajectory)
    if as_json:
        console.print_json(json.dumps(result.to_dict(), default=str))
    else:
        from tunemem.agent_client.live import summary_line

        console.print(summary_line(result, plateau), markup=False, highlight=False)


def _memory_problem(url: str | None, exc: Exception) -> str:
    """One line for a memory at --url that cannot be reached or refuses the agent."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, MemoryAPIError):
        return f"the memory at {url} refused the agent ({text}); check --url and --api-key"
    return (
        f"cannot reach the memory at {url} ({text}); start it with `make run` or "
        "`tunemem serve`, or leave out --url to tune without it"
    )


def _printer(format_attempt: Any) -> Any:
    """Print each attempt as plain text: configurations hold brackets rich would read."""
    return lambda entry: console.print(format_attempt(entry), markup=False, highlight=False)


def _run_live(
    runner: str,
    task: Path | None,
    kernel: str | None,
    shape: str | None,
    dims: str | None,
    dtype: str | None,
    space: str | None,
    url: str | None,
    budget: int,
    llm: dict[str, Any],
    **common: Any,
) -> Any:
    """Build the live runner the options name and run the agent on it."""
    if task is not None:
        fail(f"--task is for --runner replay; --runner {runner} takes --kernel and --shape/--dims")
    if runner == "cpu":
        import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to its interpreter first)
    from tunemem.agent_client.live import live_runner, parse_dims, run_live
    from tunemem.kernels.catalogue import task_names

    if kernel is None:
        fail(f"--runner {runner} needs --kernel, one of: {', '.join(task_names())}")
    if shape is not None and dims is not None:
        fail("give --shape or --dims, not both")
    built = live_runner(
        runner,
        kernel,
        shape=shape,
        dims=parse_dims(dims) if dims is not None else None,
        dtype=dtype,
        space=space,
    )
    if runner == "cpu":
        console.print(
            "cpu runner: kernels run in Triton's interpreter; attempts are judged on "
            "feasibility only (compiled, correct, did the work) and no latency is reported"
        )
    return run_live(url, built, budget, llm=llm, **common)
