"""What the memory learned: lessons ranked by their value in a chip's context, through
`GET /v1/lessons?sort=value&chip=...` and `tunemem lessons top`."""

from __future__ import annotations

from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app

TEXTS = [
    "For a row softmax keep the whole row in one program when it fits in shared memory",
    "For a row softmax split long rows over several programs and combine their maxima",
    "For a row softmax use num_warps=8 once the row is longer than 4096 elements",
]


def _lesson(text: str) -> dict:
    return {"kind": "insight", "text": text, "applicability": {"op": "softmax"}}


def _learn(client, stage: str = "draft") -> list[str]:
    """Three lessons; on a100, the first helped twice, the second failed once, the third was
    never tried."""
    ids = client.post("/v1/lessons", json={"lessons": [_lesson(t) for t in TEXTS]}).json()["ids"]
    body = {
        "query": "row softmax",
        "task": {"op": "softmax"},
        "context": {"chip": "a100"},
        "stage": stage,
        "k": 3,
    }
    for used, good in ((ids[0], True), (ids[0], True), (ids[1], False)):
        retrieval = client.post("/v1/retrieve", json=body).json()
        assert used in [lesson["id"] for lesson in retrieval["lessons"]]
        outcome = {"compiled": True, "correct": good}
        report = {"retrieval_id": retrieval["retrieval_id"], "used": [used], "outcome": outcome}
        assert client.post("/v1/outcomes", json=report).status_code == 200
    return ids


def test_sort_by_value_ranks_lessons_with_outcomes_in_the_context(client):
    ids = _learn(client)
    best = client.get("/v1/lessons?sort=value&chip=A100&stage=draft").json()
    assert best["count"] == 2 and [item["id"] for item in best["data"]] == ids[:2]
    top, bottom = (item["value"] for item in best["data"])
    assert top["chip"] == "a100" and top["value_scope"] == "chip:a100"
    # the estimate retrieval ranks by (the generalised value on a known chip): its 2 outcomes
    assert (top["n"], top["n_total"]) == (2, 2)
    assert top["value"] > 0 > bottom["value"]
    assert top["ci_low"] < top["value"] < top["ci_high"]
    worst = client.get("/v1/lessons?sort=-value&chip=a100").json()
    assert [item["id"] for item in worst["data"]] == ids[1::-1]
    elsewhere = client.get("/v1/lessons?sort=value&chip=H100").json()["data"][0]["value"]
    # no outcome on h100: its value leans on the prior and on a100's outcomes
    assert elsewhere["n"] == 0 and elsewhere["value_scope"] in ("prior", "outcomes:chip:a100")
    plain = client.get("/v1/lessons").json()
    assert plain["count"] == 3 and all(item["value"] is None for item in plain["data"])
    unknown = client.get("/v1/lessons?sort=value&chip=Frobnicator 3")
    assert unknown.status_code == 422 and unknown.json()["code"] == "unknown_chip"


def test_lessons_top_prints_both_ends_and_says_what_to_run_when_empty(client, service, tmp_path):
    runner = CliRunner()
    empty = runner.invoke(
        cli_app,
        ["lessons", "top", "--chip", "a100", "--data-dir", str(tmp_path / "fresh")],
        env={"TUNEMEM_EMBEDDER": "hashing"},
    )
    assert empty.exit_code == 0 and "no lesson has outcomes on a100" in empty.output
    assert "tunemem agent run" in empty.output
    ids = _learn(client)
    shown = runner.invoke(
        cli_app, ["lessons", "top", "--chip", "a100", "--data-dir", str(service.settings.data_dir)]
    )
    assert shown.exit_code == 0, shown.output
    highest, lowest = shown.output.split("lowest-valued lessons")
    assert "highest-valued lessons on a100" in highest
    assert highest.index(ids[0]) < highest.index(ids[1])
    assert lowest.index(ids[1]) < lowest.index(ids[0])
    assert ids[2] not in shown.output  # never tried: not ranked


def test_lessons_top_shows_the_stage_that_has_outcomes(client, service):
    """Issue 39, first hour: after an agent run (whose outcomes are mostly at refine), `lessons
    top` without --stage showed only the draft stage, empty; it shows each stage with outcomes."""
    ids = _learn(client, stage="refine")
    data = ["--data-dir", str(service.settings.data_dir)]
    shown = CliRunner().invoke(cli_app, ["lessons", "top", "--chip", "a100", *data])
    assert shown.exit_code == 0, shown.output
    assert "stage refine" in shown.output and "stage draft" not in shown.output
    assert ids[0] in shown.output
    draft = CliRunner().invoke(
        cli_app, ["lessons", "top", "--chip", "a100", "--stage", "draft", *data]
    )
    assert "no lesson has outcomes on a100 at stage draft" in draft.output
