"""`/ui`: read-only pages for analysts (reader role), server-rendered by `http.ui_pages`."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.schemas.audit import TransferQuery
from tunemem.memory_service.core.schemas.lessons import LessonFilter
from tunemem.memory_service.http import ui_pages
from tunemem.memory_service.http.audit_advice import store_option
from tunemem.memory_service.http.audit_html import render_report
from tunemem.memory_service.http.deps import ReaderDep, ServiceDep

router = APIRouter(tags=["ui"], include_in_schema=False)


@router.get("/ui/", response_class=RedirectResponse)
def ui_slash() -> RedirectResponse:
    return RedirectResponse("/ui")


@router.get("/ui", response_class=HTMLResponse)
def lessons(request: Request, svc: ServiceDep, who: ReaderDep) -> HTMLResponse:
    """Lessons with filters; ranked by value in a chip's context with sort=value."""
    # The form sends every field, empty ones as "": an empty field is no filter.
    given = {k: v for k, v in request.query_params.items() if v and k in LessonFilter.model_fields}
    try:
        where = LessonFilter(**given)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where_bad = ".".join(str(part) for part in problem["loc"])
        raise InvalidInput(f"{where_bad}: {problem['msg']}", code="invalid_request") from exc
    return HTMLResponse(ui_pages.lessons_page(where, svc.list_lessons(where, tenant=who.tenant)))


@router.get("/ui/lessons/{lesson_id}", response_class=HTMLResponse)
def lesson(lesson_id: str, svc: ServiceDep, who: ReaderDep) -> HTMLResponse:
    """One lesson: values per stage and scope, and its outcome history as a chart."""
    detail = svc.get_lesson(lesson_id, tenant=who.tenant)
    history = svc.lesson_history(detail.id, tenant=who.tenant)
    settings = svc.settings
    return HTMLResponse(ui_pages.lesson_page(detail, history.outcomes, settings.alpha, settings.q0))


@router.get("/ui/transfer", response_class=HTMLResponse)
def transfer(
    request: Request,
    svc: ServiceDep,
    who: ReaderDep,
    level: Annotated[Literal["chip", "backend"], Query()] = "chip",
    op: Annotated[str | None, Query(max_length=128)] = None,
    stage: Annotated[Literal["draft", "refine", ""] | None, Query()] = None,
) -> HTMLResponse:
    """The transfer heat maps (the audit report) for every chip or backend, with selectors of
    level, stage and op; the advice's commands carry this server's address."""
    query = TransferQuery(level=level, op=op or None, stage=stage or None)
    audit = svc.audit_transfer(query, tenant=who.tenant)
    page = render_report(audit, store=store_option(url=str(request.base_url)), selectors=True)
    return HTMLResponse(ui_pages.with_navigation(page))
