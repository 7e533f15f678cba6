"""The analyst pages read right as text: the menu's links apart on every page (the transfer
report brings its own style sheet), commands in the advice as code rather than backticks, a
lesson's hint as a table of its fields rather than a Python dict."""

from __future__ import annotations

import re
from html import unescape

HINT = {"config": {"BLOCK": 256, "num_warps": 8}, "latency_ms": 0.123456, "rank": 1}


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_menu_advice_and_hint_read_as_text(client) -> None:
    lesson = {
        "kind": "exemplar",
        "text": "BLOCK=256 with 8 warps is fastest for a row softmax on a100",
        "hint": HINT,
        "applicability": {"op": "softmax"},
    }
    lesson_id = client.post("/v1/lessons", json={"lessons": [lesson]}).json()["ids"][0]
    for path in ("/ui", "/ui/transfer", f"/ui/lessons/{lesson_id}"):
        page = client.get(path)
        assert page.status_code == 200
        assert "lessons · transfer · API" in _text(page.text), path
    transfer = client.get("/ui/transfer").text
    advice = re.findall(r'<p class="advice">(.*?)</p>', transfer)
    assert advice and all("`" not in _text(line) for line in advice)
    assert any("<code>" in line for line in advice)
    shown = client.get(f"/ui/lessons/{lesson_id}").text
    assert "{'" not in unescape(shown)  # no Python dict
    rows = dict(re.findall(r"<tr><th>([^<]+)</th><td class=\"hint\">([^<]*)</td></tr>", shown))
    assert rows == {"config": "BLOCK=256, num_warps=8", "latency_ms": "0.1235", "rank": "1"}
