"""The OpenAPI contract, checked by schemathesis (issue 11): for every operation of
/openapi.json, generated requests never get a 5xx, every response matches the documented
schema, and every error body carries a `code`. Run bounded (explicit max_examples, no
deadline, derandomized) on the keyless embedded default and once with API keys."""

from __future__ import annotations

import gzip
import json

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from sqlmodel import Session

from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.http.app import create_app

BOUNDED = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _ndjson(_ctx, value) -> bytes:
    """Bundle uploads: generated values as one JSON line each."""
    lines = value if isinstance(value, list) else [value]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _gzipped(ctx, value) -> bytes:
    return gzip.compress(_ndjson(ctx, value))


schemathesis.serializer("application/x-ndjson")(_ndjson)
schemathesis.serializer("application/gzip")(_gzipped)


def _seed(service) -> None:
    lesson = {"kind": "insight", "text": "Use 4 warps for short softmax rows"}
    from tunemem.memory_service.core.schemas.lessons import LessonCreate

    service.add_lessons([LessonCreate.model_validate(lesson)])


def _run_contract(service, headers: dict[str, str] | None = None) -> int:
    """Every operation of the schema through `BOUNDED` generated cases; returns how many."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(service))
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:

        @BOUNDED
        @given(case=operation.as_strategy())
        def run(case) -> None:
            _check(case, headers)

        run()
    return len(operations)


def _check(case, headers: dict[str, str] | None) -> None:
    response = case.call(headers=headers)
    case.validate_response(
        response, checks=[checks.not_a_server_error, checks.response_schema_conformance]
    )
    if response.status_code >= 400 and "json" in response.headers.get("content-type", ""):
        assert isinstance(response.json().get("code"), str), response.text


def test_contract_keyless(service):
    _seed(service)
    assert _run_contract(service) >= 10


def test_contract_with_keys(service):
    _seed(service)
    with Session(service.engine) as session:
        secret = create_key(session, "admin", "default", "contract")[1]
    assert _run_contract(service, {"Authorization": f"Bearer {secret}"}) >= 10
