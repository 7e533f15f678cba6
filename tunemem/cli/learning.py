"""`tunemem retrieve` and `tunemem report`: the learning loop from the command line."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    JsonOpt,
    StageOpt,
    UrlOpt,
    clip,
    console,
    emit_json,
    err,
    fail,
    open_service,
    run_guarded,
)


def retrieve(
    op: Annotated[
        str | None, typer.Option(help="operator family, e.g. softmax, convolution")
    ] = None,
    chip: Annotated[str | None, typer.Option(help="target chip name, e.g. H200, MI250X")] = None,
    backend: Annotated[
        str | None, typer.Option(help="target backend when no chip is given")
    ] = None,
    stage: StageOpt = "draft",
    query: Annotated[str, typer.Option("--query", "-q", help="free text")] = "",
    signature: Annotated[str | None, typer.Option(help='JSON object, e.g. {"N": 4096}')] = None,
    dtype: Annotated[str | None, typer.Option(help="dtype, e.g. bf16")] = None,
    model: Annotated[str | None, typer.Option(help="model name")] = None,
    scenario: Annotated[str | None, typer.Option(help="prefill, decode, training ...")] = None,
    k: Annotated[int | None, typer.Option(help="lessons to return")] = None,
    lam: Annotated[float | None, typer.Option("--lambda", help="value weight override")] = None,
    toolchain: Annotated[
        list[str] | None,
        typer.Option(help="component=version the attempt runs under (repeatable): triton=3.6.0"),
    ] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask for the lessons that apply to a task in a context."""
    from tunemem.memory_service.core.schemas.learning import RetrieveRequest
    from tunemem.retrieval.toolchain import parse_toolchain

    try:
        sig = json.loads(signature) if signature else {}
    except json.JSONDecodeError as exc:
        fail(f"--signature is not JSON: {exc}")

    def go() -> None:
        request = RetrieveRequest(
            query=query,
            task={"op": op, "signature": sig, "dtype": dtype},
            context={
                "chip": chip,
                "backend": backend,
                "model": model,
                "scenario": scenario,
                "toolchain": parse_toolchain(toolchain or []),
            },
            stage=stage,
            k=k,
            options={"lam": lam},
        )
        with open_service(url, data_dir, api_key=api_key) as memory:
            result = memory.retrieve(request)
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        console.print(
            f"retrieval [bold]{result.retrieval_id}[/bold]"
            f"  scopes: {' → '.join(result.scope_chain)}"
        )
        for warning in result.warnings:
            err.print(f"[yellow]warning:[/yellow] {warning}")
        if not result.lessons:
            console.print(
                "no lesson matched: none has this op (or none applies to the chip), or none is "
                "similar enough to the query (similarity floor "
                f"{result.settings.get('similarity_floor')}); `tunemem lessons list` shows what "
                "the store holds"
            )
            return
        estimator = result.lessons[0].breakdown.estimator
        table = Table(
            "#",
            "id",
            "kind",
            "lesson",
            "score",
            "sim",
            f"value, {estimator} (scope, n)",
            "explore",
            title=f"the value is the {estimator} estimate in this context, the one `report` "
            "answers with and `lessons top` ranks by (its terms: --json, breakdown.value_terms)",
        )
        table.columns[1].no_wrap = True
        for i, lesson in enumerate(result.lessons, 1):
            b = lesson.breakdown
            text = lesson.rendered_text or lesson.text
            flags = (
                (" (transferred)" if lesson.transferred else "")
                + (" (avoid)" if lesson.warning else "")
                + (" (stale)" if lesson.stale else "")
            )
            table.add_row(
                str(i),
                lesson.id,
                lesson.kind,
                Text(clip(text, 160 - len(flags)) + flags),
                f"{lesson.score:.3g}",
                f"{b.similarity:.3g}",
                f"{b.value:+.3g} ({b.value_scope}, n {b.n})",
                f"{b.exploration:.3g}",
            )
        console.print(table)

    run_guarded(go)


# ----------------------------------------------------------------- report
def report_key(retrieval_id: str, used: list[str] | None, outcome: dict[str, object]) -> str:
    """The idempotency key a CLI report sends unless one is given: a digest of the retrieval,
    the credited lessons and the outcome, so the same command run twice counts once."""
    body = json.dumps(
        {"retrieval_id": retrieval_id, "used": used, "outcome": outcome}, sort_keys=True
    )
    return "cli:" + hashlib.sha256(body.encode()).hexdigest()[:32]


def report(
    retrieval_id: Annotated[str, typer.Argument(help="the id a retrieve returned")],
    compiled: Annotated[
        bool, typer.Option("--compiled/--not-compiled", help="did the attempt compile")
    ] = True,
    # Two flags, not one --correct/--incorrect pair: with a pair, the last one given wins, so
    # `--correct --incorrect` would be taken for an answer.
    correct_flag: Annotated[
        bool,
        typer.Option(
            "--correct",
            help="its output was correct (this or --incorrect is required unless "
            "--not-compiled or --error)",
            show_default=False,
        ),
    ] = False,
    incorrect_flag: Annotated[
        bool, typer.Option("--incorrect", help="its output was wrong", show_default=False)
    ] = False,
    latency_ms: Annotated[float | None, typer.Option(help="measured latency")] = None,
    best_before_ms: Annotated[
        float | None, typer.Option(help="best latency before this attempt")
    ] = None,
    error: Annotated[str | None, typer.Option(help="error text")] = None,
    config: Annotated[
        str | None,
        typer.Option(help='the configuration tried, as JSON ({"block_size_x": 128, ...})'),
    ] = None,
    timing_ms: Annotated[
        list[float] | None,
        typer.Option("--timing-ms", help="one timing of the attempt (repeat for each)"),
    ] = None,
    used: Annotated[
        list[str] | None,
        typer.Option("--used", help="lesson ids used (repeat); default all returned"),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            help="makes a retried report count once; default: derived from the retrieval id, "
            "--used and the outcome, so the same command twice counts once"
        ),
    ] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Report what happened after an attempt; credited lessons' values move."""
    from tunemem.memory_service.core.schemas.outcomes import ReportRequest

    if correct_flag and incorrect_flag:
        fail("--correct and --incorrect contradict each other: give one of them")
    correct = True if correct_flag else (False if incorrect_flag else None)
    if compiled and correct is None and not error:
        fail(
            "say whether the attempt was correct: --correct or --incorrect "
            "(an attempt that did not compile takes --not-compiled, one that failed "
            "another way --error TEXT)"
        )
    outcome: dict[str, object] = {
        "compiled": compiled,
        "correct": correct,
        "latency_ms": latency_ms,
        "best_before_ms": best_before_ms,
        "error": error,
    }
    if config is not None:
        try:
            outcome["config"] = json.loads(config)
        except ValueError:
            fail(f"--config is not JSON: {config!r}")
    if timing_ms:
        outcome["timings_ms"] = list(timing_ms)
    key = idempotency_key or report_key(retrieval_id, used or None, outcome)
    # A person typed these numbers: they are kept as hand-entered, not as a tool's measurement.
    typed = {**outcome, "provenance": {"origin": "hand-entered"}}

    def go() -> None:
        request = ReportRequest(retrieval_id=retrieval_id, used=used or None, outcome=typed)
        with open_service(url, data_dir, api_key=api_key) as memory:
            result = memory.report(request, idempotency_key=key)
        if result.duplicate:
            err.print(
                "this outcome was reported before (same retrieval, lessons and outcome; "
                "idempotency key " + key + "): counted once, its answer follows"
            )
        emit_json(result.model_dump(mode="json"))

    run_guarded(go)
