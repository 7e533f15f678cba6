"""The analyst pages under /ui: lessons with filters and values, one lesson's values and its
outcome history chart, the transfer heat maps; checked in headless Chromium by what they show
(the rows, the chart's dots and lines, the legend) and in the screenshot's pixels."""

from __future__ import annotations

import re

import pytest

from tunemem.memory_service.http.app import create_app

TEXTS = [
    "For a row softmax keep the whole row in one program when it fits in shared memory",
    "For a row softmax split long rows over several programs and combine their maxima",
    "For a row softmax use num_warps=8 once the row is longer than 4096 elements",
]
DRAFT_RGB = (0x1F, 0x77, 0xB4)


def _learn(client) -> list[str]:
    """Three lessons on a100: the first helped twice in draft and once in refine, the second
    failed once, the third was never tried."""
    lessons = [{"kind": "insight", "text": t, "applicability": {"op": "softmax"}} for t in TEXTS]
    ids = client.post("/v1/lessons", json={"lessons": lessons}).json()["ids"]
    steps = [
        ("draft", ids[0], {"compiled": True, "correct": True}),
        ("draft", ids[0], {"compiled": True, "correct": True}),
        ("draft", ids[1], {"compiled": True, "correct": False}),
        (
            "refine",
            ids[0],
            {"compiled": True, "correct": True, "latency_ms": 1.0, "best_before_ms": 1.5},
        ),
    ]
    for stage, used, outcome in steps:
        body = {
            "query": "row softmax",
            "task": {"op": "softmax"},
            "context": {"chip": "a100"},
            "stage": stage,
            "k": 3,
        }
        retrieval = client.post("/v1/retrieve", json=body).json()
        report = {"retrieval_id": retrieval["retrieval_id"], "used": [used], "outcome": outcome}
        assert client.post("/v1/outcomes", json=report).status_code == 200
    return ids


def _draft_pixels(shot) -> tuple[int, int]:
    """How many pixels of the screenshot have the draft colour, and how many are not white."""
    from PIL import Image

    pixels = list(Image.open(shot).convert("RGB").getdata())
    blue = sum(1 for p in pixels if all(abs(c - d) < 12 for c, d in zip(p, DRAFT_RGB, strict=True)))
    return blue, sum(1 for p in pixels if p != (255, 255, 255))


def _local_only(html: str) -> None:
    for url in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert url.startswith("/"), url  # nothing fetched from elsewhere


def test_pages_render_on_the_server(client):
    ids = _learn(client)
    listing = client.get("/ui?kind=&op=&chip=&sort=created&stage=draft")
    assert listing.status_code == 200 and listing.headers["content-type"].startswith("text/html")
    assert re.findall(r'<tr class="lesson" data-id="([^"]+)"', listing.text) == ids
    _local_only(listing.text)
    ranked = client.get("/ui?sort=value&chip=a100").text
    assert re.findall(r'<tr class="lesson" data-id="([^"]+)"', ranked) == ids[:2]
    lesson = client.get(f"/ui/lessons/{ids[0][:8]}").text  # a prefix, as a table shows it
    assert len(re.findall(r'<circle class="outcome"', lesson)) == 3
    assert 'data-stage="refine"' in lesson and "draft value (global Q)" in lesson
    _local_only(lesson)
    untried = client.get(f"/ui/lessons/{ids[2]}").text
    assert 'id="no-history"' in untried
    empty = client.get("/ui?sort=value&chip=mi300x&op=gemm").text  # no gemm lesson tried
    assert "No lesson has outcomes on mi300x" in empty and "tunemem agent run" in empty
    transfer = client.get("/ui/transfer").text
    assert 'class="advice"' in transfer and "tunemem agent run" in transfer
    assert client.get("/ui?sort=sideways").status_code == 422


@pytest.mark.browser
def test_pages_in_a_real_browser(client, service, serve, browser, tmp_path):
    ids = _learn(client)
    url = serve(create_app(service))
    dom = browser(f"{url}/ui?sort=value&chip=a100", wait_ms=3000)
    assert re.findall(r'<tr class="lesson" data-id="([^"]+)"', dom) == ids[:2]
    assert "+" in re.findall(r'<td class="num">([^<]+)</td>', dom)[0]  # the top value > 0
    shot = tmp_path / "lesson.png"
    dom = browser(f"{url}/ui/lessons/{ids[0]}", screenshot=shot, wait_ms=3000)
    assert len(re.findall(r'<circle class="outcome" data-stage="draft"', dom)) == 2
    assert len(re.findall(r'<circle class="outcome" data-stage="refine"', dom)) == 1
    assert len(re.findall(r'<polyline class="value-line"', dom)) == 2
    legend = re.search(r'<g class="legend">(.*?)</g>', dom, re.S)
    assert legend and all(
        label in legend.group(1)
        for label in ("draft reward", "refine reward", "draft value (global Q)")
    )
    assert len(re.findall(r'<tr class="value">', dom)) >= 8  # 2 stages x 4 scopes
    blue, painted = _draft_pixels(shot)
    if blue <= 80 and painted == 0:  # a blank frame: Chromium shot before its first paint
        browser(f"{url}/ui/lessons/{ids[0]}", screenshot=shot, wait_ms=6000)
        blue, painted = _draft_pixels(shot)
    assert blue > 80, f"the draft dots are not on the screenshot ({painted} non-white pixels)"
    transfer = browser(f"{url}/ui/transfer", wait_ms=3000)
    assert 'id="heatmap-spearman"' in transfer and 'class="advice"' in transfer


def test_the_lesson_page_shows_the_estimate_lessons_top_shows(client) -> None:
    """The page showed only the running reward per scope, which differs from the value that
    retrieve and `lessons top` show: it shows that one estimate in each context where the
    lesson has outcomes, named by its estimator, beside the terms."""
    ids = _learn(client)
    page = client.get(f"/ui/lessons/{ids[0]}").text
    listed = client.get(
        "/v1/lessons", params={"sort": "value", "chip": "a100", "stage": "draft"}
    ).json()["data"]
    shown = next(x["value"] for x in listed if x["id"] == ids[0])
    rows = re.findall(r'<tr class="estimate">(.*?)</tr>', page, re.S)
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows]
    (a100_draft,) = [c for c in cells if c[0] == "draft" and c[1] == "a100"]
    assert a100_draft[2] == shown["estimator"] == "generalised"  # the default estimator
    assert a100_draft[3] == f"{shown['value']:+.3g}"
    assert a100_draft[4] == f"[{shown['ci_low']:+.3g}, {shown['ci_high']:+.3g}]"
    assert {c[1] for c in cells} == {"global", "a100"}
    note = re.search(r'<p class="meta" id="which-value">(.*?)</p>', page, re.S)
    assert note and "[-1, 1]" in note[1] and "lessons top" in note[1]
