"""`tunemem suggest`: the next configurations of a parameter space to try, from the memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    JsonOpt,
    UrlOpt,
    clip,
    console,
    emit_json,
    err,
    fail,
    open_service,
    run_guarded,
)
from tunemem.memory_service.core.schemas.lessons import Stage


def _json_arg(value: str | None, option: str) -> Any:
    """A JSON option's value, given inline or as @FILE."""
    if value is None:
        return None
    try:
        if value.startswith("@"):
            return json.loads(Path(value[1:]).read_text())
        return json.loads(value)
    except OSError as exc:
        fail(f"{option}: cannot read {value[1:]}: {exc.strerror}")
    except json.JSONDecodeError as exc:
        fail(f"{option} is not JSON: {exc}")


def suggest(
    space: Annotated[
        str,
        typer.Option(
            help='the parameter space as JSON or @FILE: {"params": {"BLOCK": [64, 128]}, '
            '"valid": [...]} (valid optional), or just the params object'
        ),
    ],
    op: Annotated[str | None, typer.Option(help="operator family, e.g. convolution")] = None,
    kernel: Annotated[str | None, typer.Option(help="kernel name")] = None,
    chip: Annotated[str | None, typer.Option(help="target chip name, e.g. H200, W6600")] = None,
    backend: Annotated[
        str | None, typer.Option(help="target backend when no chip is given")
    ] = None,
    signature: Annotated[
        str | None, typer.Option(help='problem size as JSON, e.g. {"N": 4096}')
    ] = None,
    dtype: Annotated[str | None, typer.Option(help="dtype, e.g. bf16")] = None,
    observations: Annotated[
        str | None,
        typer.Option(
            help='the run so far as JSON or @FILE: [{"config": {...}, "latency_ms": 1.2, '
            '"feasible": true}, ...]'
        ),
    ] = None,
    k: Annotated[int, typer.Option(help="configurations to return")] = 5,
    stage: Annotated[
        Stage | None, typer.Option(help="draft or refine (default: from the observations)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="the search's seed")] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Suggest untried configurations of a parameter space, in the memory's order."""
    from tunemem.memory_service.core.schemas.suggest import SuggestRequest

    space_value = _json_arg(space, "--space")
    if isinstance(space_value, dict) and "params" not in space_value:
        space_value = {"params": space_value}
    sig = _json_arg(signature, "--signature") or {}
    seen = _json_arg(observations, "--observations") or []

    def go() -> None:
        request = SuggestRequest(
            task={"op": op, "kernel": kernel, "signature": sig, "dtype": dtype},
            context={"chip": chip, "backend": backend},
            space=space_value,
            observations=seen,
            k=k,
            stage=stage,
            seed=seed,
        )
        with open_service(url, data_dir, api_key=api_key) as memory:
            result = memory.suggest(request)
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        console.print(
            f"retrieval [bold]{result.retrieval_id}[/bold]  stage {result.stage}"
            f"  chip {result.chip or '-'}"
        )
        for warning in result.warnings:
            err.print(f"[yellow]warning:[/yellow] {warning}")
        table = Table("#", "source", "configuration", "lessons (value, scope, n)", "why")
        for i, item in enumerate(result.suggestions, 1):
            config = ", ".join(f"{name}={value}" for name, value in item.config.items())
            lessons = "; ".join(
                f"{lesson.id} ({lesson.value:+.2f}, {lesson.value_scope}, {lesson.n})"
                for lesson in item.lessons
            )
            table.add_row(str(i), item.source, config, lessons or "-", clip(item.rationale, 60))
        console.print(table)

    run_guarded(go)
