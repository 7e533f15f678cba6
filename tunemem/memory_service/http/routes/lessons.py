"""Lesson routes: add, list, show, edit, archive, and the history behind a lesson's values."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tunemem.memory_service.core.schemas.learning import LessonHistory
from tunemem.memory_service.core.schemas.lessons import (
    LessonDetail,
    LessonFilter,
    LessonList,
    LessonPublic,
    LessonsCreate,
    LessonsCreated,
    LessonUpdate,
)
from tunemem.memory_service.http.deps import AdminDep, ReaderDep, ServiceDep
from tunemem.memory_service.http.ratelimit import WriterDep

router = APIRouter(tags=["lessons"])


@router.post("/v1/lessons", status_code=201, response_model=LessonsCreated)
def add_lessons(body: LessonsCreate, svc: ServiceDep, who: WriterDep) -> LessonsCreated:
    """Add one or many lessons (idempotent by content; near-duplicates merge)."""
    return svc.add_lessons(body.lessons, tenant=who.tenant, creator=f"key:{who.role}")


@router.get("/v1/lessons", response_model=LessonList)
def list_lessons(
    svc: ServiceDep, who: ReaderDep, where: Annotated[LessonFilter, Query()]
) -> LessonList:
    """List lessons with filters and paging; `count` is the total matching."""
    return svc.list_lessons(where, tenant=who.tenant)


@router.get("/v1/lessons/{lesson_id}", response_model=LessonDetail)
def get_lesson(lesson_id: str, svc: ServiceDep, who: ReaderDep) -> LessonDetail:
    """One lesson with its values per stage and scope."""
    return svc.get_lesson(lesson_id, tenant=who.tenant)


@router.patch("/v1/lessons/{lesson_id}", response_model=LessonPublic)
def update_lesson(
    lesson_id: str, body: LessonUpdate, svc: ServiceDep, who: AdminDep
) -> LessonPublic:
    """Edit a lesson's text, kind, hint or applicability (the old version is kept)."""
    return svc.update_lesson(lesson_id, body, tenant=who.tenant)


@router.delete("/v1/lessons/{lesson_id}", response_model=LessonPublic)
def archive_lesson(lesson_id: str, svc: ServiceDep, who: AdminDep) -> LessonPublic:
    """Archive a lesson: it leaves retrieval; it and its history are kept."""
    return svc.archive_lesson(lesson_id, tenant=who.tenant)


@router.get("/v1/lessons/{lesson_id}/history", response_model=LessonHistory)
def lesson_history(lesson_id: str, svc: ServiceDep, who: ReaderDep) -> LessonHistory:
    """The outcomes behind a lesson's values."""
    return svc.lesson_history(lesson_id, tenant=who.tenant)
