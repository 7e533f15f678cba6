"""Pydantic fields made from the ranking knob table (`retrieval.knobs`): the service's
environment settings and the per-request overrides both take their knobs from here, so a knob
is declared once."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tunemem.memory_service.core.schemas.lessons import Number
from tunemem.retrieval.knobs import KNOBS, Knob

# Knobs a request sets outside `options` (the request's own field of the same name).
REQUEST_LEVEL = ("k",)


def _bounds(knob: Knob) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    if knob.low is not None:
        bounds["gt" if knob.open_low else "ge"] = knob.low
    if knob.high is not None:
        bounds["le"] = knob.high
    return bounds


def _annotation(knob: Knob, *, strict: bool) -> Any:
    if knob.choices:
        return Literal[knob.choices]  # type: ignore[valid-type]  # the table's choices
    if knob.kind is bool:
        return bool
    if knob.kind is int:
        return Annotated[int, Field(strict=True)] if strict else int
    return Number if strict else float


def setting_field(name: str) -> tuple[Any, Any]:
    """(annotation, field) of a knob as an environment setting: the service's default, lax
    types (the environment is text)."""
    knob = KNOBS[name]
    return _annotation(knob, strict=False), Field(
        knob.default, description=knob.description, **_bounds(knob)
    )


def request_field(name: str) -> tuple[Any, Any]:
    """(annotation, field) of a knob as a per-request override: optional (None: the service's
    setting), strict types (a JSON `true` is no number)."""
    knob = KNOBS[name]
    return _annotation(knob, strict=True) | None, Field(
        None, description=knob.description, **_bounds(knob)
    )


def option_fields() -> dict[str, tuple[Any, Any]]:
    """The fields of a retrieve's `options`: every knob a request may set, less those it sets
    at its own level."""
    return {
        name: request_field(name)
        for name, knob in KNOBS.items()
        if knob.per_request and name not in REQUEST_LEVEL
    }


def setting_fields() -> dict[str, tuple[Any, Any]]:
    return {name: setting_field(name) for name in KNOBS}
