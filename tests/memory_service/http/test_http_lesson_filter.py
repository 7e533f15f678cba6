"""The lesson filter is one model (LessonFilter): the route takes it as query parameters, the
CLI and the remote client build it, and bad values are refused the same way everywhere."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.memory_service.core.schemas.lessons import LessonCreate, LessonFilter

LESSONS = [
    LessonCreate(
        kind="insight", text="softmax likes one row per program", applicability={"op": "softmax"}
    ),
    LessonCreate(
        kind="failure",
        text="rmsnorm without fp32 accumulate drifts",
        applicability={"op": "rmsnorm"},
    ),
]


@pytest.mark.parametrize(
    "params",
    [{"status": "gone"}, {"limit": 0}, {"limit": 501}, {"offset": -1}, {"kind": "rumour"}],
)
def test_bad_filters_are_422_and_name_the_field(client, params):
    response = client.get("/v1/lessons", params=params)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_request"
    assert next(iter(params)) in body["message"]


def test_the_route_and_the_service_agree(client, service):
    service.add_lessons(LESSONS)
    where = {"op": "softmax", "limit": 1}
    over_http = client.get("/v1/lessons", params=where).json()
    direct = service.list_lessons(LessonFilter(**where)).model_dump(mode="json")
    assert over_http == direct
    assert over_http["count"] == 1 and "softmax" in over_http["data"][0]["text"]
    failures = client.get("/v1/lessons", params={"kind": "failure"}).json()
    assert [item["kind"] for item in failures["data"]] == ["failure"]


def test_the_cli_refuses_an_unknown_status(tmp_path):
    done = CliRunner().invoke(
        app, ["lessons", "list", "--status", "gone", "--data-dir", str(tmp_path / "s")]
    )
    assert done.exit_code == 2 and "status" in done.output
