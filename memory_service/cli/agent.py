"""`tunemem agent run`: the LangGraph agent tuning one task on one chip against a server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from memory_service.cli.common import console, fail

agent_app = typer.Typer(help="Run the LangGraph tuning agent.", no_args_is_help=True)


@agent_app.command("run")
def agent_run(
    task: Annotated[Path, typer.Option(help="a Kernel Tuner cache file, or a folder of them")],
    chip: Annotated[
        str | None, typer.Option(help="chip to tune on (picks the file in a folder)")
    ] = None,
    budget: Annotated[int, typer.Option(help="most attempts")] = 20,
    url: Annotated[
        str | None, typer.Option("--url", help="memory service; omit to run without memory")
    ] = None,
    proposer: Annotated[str, typer.Option(help="structured, llm or random")] = "structured",
    k: Annotated[int, typer.Option(help="lessons per retrieval")] = 3,
    seed: Annotated[int, typer.Option()] = 0,
    plateau: Annotated[
        int | None, typer.Option(help="stop after this many attempts without improvement")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option(help="name the run (resume with the same id)")
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="SQLite checkpoint file for resuming")
    ] = None,
    llm_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint for --proposer llm")
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option(help="model name (TUNEMEM_LLM_MODEL); key: TUNEMEM_LLM_API_KEY")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Tune a recorded task; prints each attempt, the lessons it used and their values."""
    from agent_client.run import format_attempt, run_agent
    from memory_service.cli.common import settings_for

    settings = settings_for()
    if not task.exists():
        fail(f"no such task file or folder: {task}")
    try:
        result = run_agent(
            url,
            task,
            chip,
            budget,
            proposer=proposer,
            k=k,
            seed=seed,
            plateau=plateau,
            run_id=run_id,
            checkpoint=checkpoint,
            api_key=settings.api_key,
            llm_url=llm_url or settings.llm_url,
            llm_model=llm_model or settings.llm_model,
            llm_api_key=settings.llm_api_key,
            on_attempt=None if as_json else (lambda entry: console.print(format_attempt(entry))),
        )
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        console.print_json(json.dumps(result.to_dict(), default=str))
    else:
        console.print(
            f"best {result.best_latency_ms} ms with {result.best_config} "
            f"after {len(result.attempts)} attempts ({result.stop_reason})"
        )
