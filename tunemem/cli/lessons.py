"""`tunemem lessons ...`: list, show, archive and add lessons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    JsonOpt,
    UrlOpt,
    clip,
    console,
    emit_json,
    fail,
    terms_text,
    with_memory,
)
from tunemem.memory_service.core.schemas.lessons import LessonFilter, LessonKind, LessonList, Stage
from tunemem.memory_service.protocol import MemoryAPI

lessons_app = typer.Typer(help="List, show, add and archive lessons.", no_args_is_help=True)


@lessons_app.command("list")
def lessons_list(
    kind: Annotated[str | None, typer.Option()] = None,
    backend: Annotated[str | None, typer.Option()] = None,
    chip: Annotated[str | None, typer.Option()] = None,
    op: Annotated[str | None, typer.Option()] = None,
    q: Annotated[str | None, typer.Option("--q", help="text contains")] = None,
    status: Annotated[str, typer.Option(help="active, archived or all")] = "active",
    limit: Annotated[int, typer.Option()] = 20,
    offset: Annotated[int, typer.Option()] = 0,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List lessons with filters and paging."""

    def go(svc: MemoryAPI) -> None:
        # Validated like the HTTP query: an unknown kind or status is an error, not no match.
        where = LessonFilter.model_validate(
            {
                "kind": kind,
                "backend": backend,
                "chip": chip,
                "op": op,
                "q": q,
                "status": status,
                "limit": limit,
                "offset": offset,
            }
        )
        result = svc.list_lessons(where)
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        table = Table("id", "kind", "op", "chips", "text", title=f"{result.count} lessons match")
        table.columns[0].no_wrap = True
        for lesson in result.data:
            a = lesson.applicability
            table.add_row(
                lesson.id,
                lesson.kind,
                a.op or "*",
                ",".join(a.chips) or "*",
                Text(clip(lesson.text, 110)),
            )
        console.print(table)

    with_memory(go, url, data_dir, api_key=api_key)


@lessons_app.command("stale")
def lessons_stale(
    toolchain: Annotated[
        list[str] | None,
        typer.Option(
            help="component=version to compare with (repeatable), e.g. triton=3.6; "
            "default the newest version of each component recorded"
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="judge on this backend's compilers (default: each lesson's)")
    ] = None,
    op: Annotated[str | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 20,
    offset: Annotated[int, typer.Option()] = 0,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List lessons whose evidence is all from superseded toolchain versions."""

    def go(svc: MemoryAPI) -> None:
        where = LessonFilter.model_validate(
            {
                "backend": backend,
                "op": op,
                "limit": limit,
                "offset": offset,
                "stale": True,
                "toolchain": toolchain or [],
            }
        )
        result = svc.list_lessons(where)
        if as_json:
            emit_json(result.model_dump(mode="json"))
            return
        against = ", ".join(f"{c} {v}" for c, v in sorted((result.toolchain or {}).items()))
        table = Table(
            "id",
            "kind",
            "op",
            "measured under",
            "text",
            title=f"{result.count} stale against {against}",
        )
        for lesson in result.data:
            superseded = sorted(
                {f"{c.component} {c.evidence}" for e in lesson.evidence or [] for c in e.changed}
            )
            table.add_row(
                lesson.id,
                lesson.kind,
                lesson.applicability.op or "*",
                ", ".join(superseded),
                Text(clip(lesson.text, 90)),
            )
        console.print(table)

    with_memory(go, url, data_dir, api_key=api_key)


def print_unreproduced(found: LessonList, as_json: bool) -> None:
    """Lessons whose source run's claims failed to reproduce, worst run first."""
    if as_json:
        emit_json(found.model_dump(mode="json"))
        return
    if not found.count:
        console.print(
            "no recorded run's claims have been contradicted by outcomes on its chip yet",
            markup=False,
        )
        return
    table = Table(
        "id",
        "kind",
        "run chip",
        "reproduced",
        "claimed reach → measured",
        "re-measured",
        "text",
        title=f"lessons whose recorded claims failed to reproduce ({found.count})",
    )
    table.columns[0].no_wrap = True
    for lesson in found.data:
        claims = lesson.claims
        assert claims is not None
        table.add_row(
            lesson.id,
            lesson.kind,
            claims.chip,
            f"{claims.reproduced:.2f}",
            f"{claims.claimed_reach:.2f} → {claims.measured_reach:.2f}",
            str(claims.n),
            Text(clip(lesson.text, 80)),
        )
    console.print(table)


@lessons_app.command("top")
def lessons_top(
    chip: Annotated[
        str | None, typer.Option(help="the context: values down this chip's scope chain")
    ] = None,
    stage: Annotated[
        Stage | None,
        typer.Option(help="draft or refine (default: each stage that has outcomes)"),
    ] = None,
    op: Annotated[str | None, typer.Option()] = None,
    kind: Annotated[LessonKind | None, typer.Option()] = None,
    n: Annotated[int, typer.Option("--n", help="lessons in each list")] = 5,
    unreproduced: Annotated[
        bool,
        typer.Option(
            "--unreproduced",
            help="instead: lessons of recorded runs whose claims outcomes contradicted",
        ),
    ] = False,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The highest- and lowest-valued lessons in a context, with n and 95% interval; without
    --stage, for each stage that has outcomes (an agent run learns mostly at refine)."""

    def go(svc: MemoryAPI) -> None:
        if unreproduced:
            wanted = LessonFilter(chip=chip, op=op, kind=kind, sort="unreproduced", limit=n)
            print_unreproduced(svc.list_lessons(wanted), as_json)
            return
        by_stage = {
            at: {
                order: svc.list_lessons(
                    LessonFilter(chip=chip, stage=at, op=op, kind=kind, sort=order, limit=n)
                )
                for order in ("value", "-value")
            }
            for at in ((stage,) if stage else STAGES)
        }
        shown = {at: lists for at, lists in by_stage.items() if lists["value"].count}
        if as_json:
            emit_json(
                {
                    at: {
                        "highest": lists["value"].model_dump(mode="json"),
                        "lowest": lists["-value"].model_dump(mode="json"),
                    }
                    for at, lists in by_stage.items()
                }
            )
            return
        where = f"on {chip}" if chip else "in the global scope"
        if not shown:
            at_stage = f"at stage {stage}" if stage else "at any stage"
            console.print(
                f"no lesson has outcomes {where} {at_stage} yet: run an agent there "
                "(`.venv/bin/tunemem agent run --task tunemem/ingest/samples/targets/convolution "
                "--chip w6600 --url URL`) or report outcomes (`.venv/bin/tunemem report`, "
                "POST /v1/outcomes)",
                markup=False,
            )
            return
        for at, lists in shown.items():
            _print_top(lists, where, at)

    with_memory(go, url, data_dir, api_key=api_key)


STAGES: tuple[Stage, ...] = ("draft", "refine")


def _print_top(lists: dict[str, Any], where: str, stage: str) -> None:
    first = lists["value"].data[0].value
    estimator = first.estimator if first else "chain"
    for order, title in (("value", "highest"), ("-value", "lowest")):
        table = Table(
            "id",
            "kind",
            "value",
            "95% interval",
            "scope",
            "n (scope / chain)",
            "terms",
            "text",
            title=f"{title}-valued lessons {where}, stage {stage} "
            f"({lists[order].count} with outcomes; the {estimator} estimate, as retrieve "
            "ranks by and report answers with)",
        )
        table.columns[0].no_wrap = True
        for lesson in lists[order].data:
            v = lesson.value
            assert v is not None
            table.add_row(
                lesson.id,
                lesson.kind,
                f"{v.value:+.3g}",
                Text(f"[{v.ci_low:+.3g}, {v.ci_high:+.3g}]"),
                v.value_scope,
                f"{v.n} / {v.n_total}",
                Text(terms_text(v.terms)),
                Text(clip(lesson.text, 70)),
            )
        console.print(table)


@lessons_app.command("show")
def lessons_show(
    lesson_id: str,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    history: Annotated[
        bool, typer.Option("--history", help="include the outcomes behind the values")
    ] = False,
) -> None:
    """Show one lesson with its values per stage and scope."""

    def go(svc: MemoryAPI) -> None:
        data = svc.get_lesson(lesson_id).model_dump(mode="json")
        if history:
            data["history"] = svc.lesson_history(lesson_id).model_dump(mode="json")["outcomes"]
        emit_json(data)

    with_memory(go, url, data_dir, api_key=api_key)


@lessons_app.command("archive")
def lessons_archive(
    lesson_id: str, url: UrlOpt = None, data_dir: DataDirOpt = None, api_key: ApiKeyOpt = None
) -> None:
    """Archive a lesson (kept with its history, no longer retrieved)."""
    with_memory(
        lambda svc: emit_json(svc.archive_lesson(lesson_id).model_dump(mode="json")),
        url,
        data_dir,
        api_key=api_key,
    )


@lessons_app.command("add")
def lessons_add(
    file: Annotated[
        Path, typer.Argument(help='JSON file: {"lessons": [...]} as POST /v1/lessons takes')
    ],
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Add lessons from a JSON file (idempotent)."""
    from pydantic import ValidationError

    from tunemem.memory_service.core.schemas.lessons import LessonsCreate

    try:
        body = LessonsCreate(**json.loads(file.read_text()))
    except (OSError, json.JSONDecodeError, ValidationError, TypeError) as exc:
        fail(f"{file}: {exc}")
    with_memory(
        lambda svc: emit_json(svc.add_lessons(body.lessons).model_dump()),
        url,
        data_dir,
        api_key=api_key,
    )
