"""The API page's Python example that credits by configuration (the one the README points to)
runs as printed against a served store, with the URL it names pointed at a test server."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from tunemem.memory_service.http.app import create_app

PAGE = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def _sdk_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    (example,) = [block for block in blocks if "MemoryClient(" in block and "config=" in block]
    return example


def test_readme_sdk_example_runs(service, serve, capsys):
    with TestClient(create_app(service)) as client:
        lesson = {
            "kind": "exemplar",
            "text": "On mi250x the convolution's fastest configuration tiles 128x4 per block",
            "applicability": {"op": "convolution"},
            "hint": {"config": {"block_size_x": 128, "tile_size_y": 4}},
        }
        assert client.post("/v1/lessons", json={"lessons": [lesson]}).status_code == 201
    url = serve(create_app(service))
    code = _sdk_example().replace("http://127.0.0.1:8000", url)
    exec(compile(code, "docs/api.md", "exec"), {})
    printed = capsys.readouterr().out
    # The exemplar's configuration was the one tried: the lesson was followed and rewarded.
    (lesson_id,) = set(re.findall(r"'([0-9a-f-]{36})'", printed))
    assert f"{{'{lesson_id}': 1.0}} {{'{lesson_id}': 'followed'}}" in printed
    assert service.counts()["outcomes"] == 1


def test_readme_sdk_example_does_not_reward_the_advice_its_outcome_contradicted(
    service, serve, capsys
):
    """On the quickstart's store the example gets an A100 lesson "avoid tile_size_y=4,
    read_only=1" first and reports the W6600's optimum, which carries both, as fast and correct:
    that lesson was shown wrong on the W6600 and must lose value there, not gain it (issue 36,
    case 3)."""
    from tunemem.cli.serve import seed_samples

    seed_samples(service)
    url = serve(create_app(service))
    exec(compile(_sdk_example().replace("http://127.0.0.1:8000", url), "docs/api.md", "exec"), {})
    printed = capsys.readouterr().out
    first_id = re.findall(r"'([0-9a-f-]{36})'", printed)[0]
    history = service.lesson_history(first_id)
    (outcome,) = history.outcomes
    lesson = service.get_lesson(first_id)
    assert lesson.kind == "failure" and lesson.hint["avoid"] == {"tile_size_y": 4, "read_only": 1}
    (w6600,) = [v for v in history.values if v.scope == "chip:w6600"]
    assert w6600.q < service.settings.q0
    assert f"{{'{first_id}': -1.0}} {{'{first_id}': 'contradicted'}}" in printed
