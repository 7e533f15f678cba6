"""Every figure the README and the docs pages quote from a result is in the file they link.

A quoted figure is written as a Markdown link whose text holds the number(s) and whose target is
a committed result under `bench/results/`: `[0.985](bench/results/autotune/cold-replay.md)`, or
`[0.930 (0.910-0.950)](../bench/results/tuners/dev.md)` for a mean and its range over seeds.
Every number in the link's text must be in that file, so a page cannot drift from its results:

- in a Markdown result, as the same number (`0.930` is not `0.93` nor `0.9301`);
- in a JSON result, as a number that rounds to it at the digits quoted (`0.987` for 0.98661);
  a percentage (`81 %`) matches a share (0.813).

Links into `bench/results/` must name files that exist (superseded results leave the folder;
git keeps them), and the README must quote its figures this way. A path into `bench/results/`
named in a page's text (not a link: `bench/results/tuners/dev.{json,md}`,
`bench/results/learning/*-045ac13.*`) must name something there too, unless it is a command's
output (`--out PATH`) or a file in git history (`git show SHA:PATH`).
"""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(["README.md", *(str(p.relative_to(REPO)) for p in REPO.glob("docs/*.md"))])
# [text](target): the text may hold brackets one level deep (a range: `0.93 [0.91-0.95]`).
LINK = re.compile(r"\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])+)\]\((?P<target>[^)\s]+)\)")
CODE = re.compile(r"`[^`]*`")
NUMBER = re.compile(r"(?<![\w.])(?P<value>\d[\d,]*(?:\.\d+)?)(?P<percent>\s?%)?")


def quoted(page: str) -> list[tuple[str, Path, int]]:
    """(link text, result file, line) of every link from `page` into bench/results/."""
    found = []
    for number, line in enumerate((REPO / page).read_text().splitlines(), 1):
        for match in LINK.finditer(CODE.sub("", line)):  # an example in code is not a quote
            target = (REPO / page).parent / match["target"].split("#", 1)[0]
            if "bench/results/" in target.resolve().as_posix() + "/":
                found.append((match["text"], target.resolve(), number))
    return found


def numbers(text: str) -> list[tuple[str, bool]]:
    """(number as written, is a percentage) of each figure in a link's text."""
    return [(m["value"].replace(",", ""), bool(m["percent"])) for m in NUMBER.finditer(text)]


def _json_numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _json_numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _json_numbers(v)]
    return []


def in_result(figure: str, percent: bool, result: Path) -> bool:
    """Whether `figure` (as written on the page) is a figure of `result`."""
    text = result.read_text()
    if result.suffix != ".json":
        return (
            re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", text.replace(",", "")) is not None
        )
    digits = len(figure.partition(".")[2])
    wanted = float(figure)
    for value in _json_numbers(json.loads(text)):
        for scaled in (value * 100, value) if percent else (value,):
            if abs(round(scaled, digits) - wanted) < 10 ** -(digits + 3):
                return True
    return False


def drift(page: str) -> list[str]:
    """Every quoted figure of `page` that its linked file does not hold, and every link into
    bench/results/ that names no file."""
    problems = []
    for text, result, line in quoted(page):
        if not result.is_file():
            problems.append(f"{page}:{line}: links {result.relative_to(REPO)}, which is not there")
            continue
        for figure, percent in numbers(text):
            if not in_result(figure, percent, result):
                name = result.relative_to(REPO)
                problems.append(
                    f"{page}:{line}: {figure}{' %' if percent else ''} is not in {name}"
                )
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_quoted_figure_is_in_the_result_it_links(page: str) -> None:
    assert drift(page) == []


def test_the_readme_quotes_its_figures_from_result_files() -> None:
    figures = [n for text, _, _ in quoted("README.md") for n in numbers(text)]
    assert len(figures) >= 20, "the README's figures are not linked to their result files"


def test_a_figure_that_drifted_from_its_file_is_caught(tmp_path: Path, monkeypatch) -> None:
    """The check itself, on a page and results written here: a Markdown result's figure must be
    there as written; a JSON result's must round to it; a missing file is named."""
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    (results / "r.md").write_text("| tunemem | 0.930 [0.910 – 0.950] | 81 % |\n")
    (results / "r.json").write_text(json.dumps({"a": {"speed": 0.98661, "share": 0.8133}}))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "p.md").write_text(
        "ok [0.930 (0.910-0.950)](../bench/results/r.md), [0.987](../bench/results/r.json) and "
        "[81 %](../bench/results/r.json)\n"
        "drifted [0.93](../bench/results/r.md), [0.986](../bench/results/r.json), "
        "[0.920](../bench/results/r.md), [1.0](../bench/results/gone.md)\n"
    )
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert drift("docs/p.md") == [
        "docs/p.md:2: 0.93 is not in bench/results/r.md",
        "docs/p.md:2: 0.986 is not in bench/results/r.json",
        "docs/p.md:2: 0.920 is not in bench/results/r.md",
        "docs/p.md:2: links bench/results/gone.md, which is not there",
    ]


# `bench/results/...` in a page's text: not a command's output (`--out PATH`) nor a path in git
# history (`SHA:PATH`); `<kernel>` in it stands for any name.
NAMED = re.compile(r"(?<!--out )(?<![\w/.:-])((?:\.\./)?bench/results/(?:[\w./*{},-]|<\w+>)*)")
# Names a page gives as examples of a path, not as a result.
EXAMPLES = {"bench/results/x.md", "bench/results/moe/seedN/"}


def _braces(path: str) -> list[str]:
    """`a{b,c}d` as `abd`, `acd` (every brace, as the shell expands them)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        return [path]
    head, tail = path[: match.start()], path[match.end() :]
    return [p for alt in match[1].split(",") for p in _braces(head + alt + tail)]


def named_but_missing(page: str) -> list[str]:
    """Every path into bench/results/ that `page` names in its text and nothing there matches."""
    problems = []
    for number, line in enumerate((REPO / page).read_text().splitlines(), 1):
        for match in NAMED.finditer(line):
            named = match[1].rstrip(".,").removeprefix("../")
            if named in EXAMPLES:
                continue
            for path in _braces(re.sub(r"<\w+>", "*", named)):
                if not glob.glob(str(REPO / path.rstrip("/"))):
                    problems.append(f"{page}:{number}: names {named}, which is not there")
                    break
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_result_a_page_names_is_there(page: str) -> None:
    assert named_but_missing(page) == []


def test_a_named_result_that_moved_is_caught(tmp_path: Path, monkeypatch) -> None:
    results = tmp_path / "bench" / "results" / "tuners"
    results.mkdir(parents=True)
    for name in ("dev.json", "dev.md", "dev-045ac13.md"):
        (results / name).write_text("{}")
    (tmp_path / "p.md").write_text(
        "here `bench/results/tuners/dev.{json,md}`, `bench/results/tuners/*-045ac13.*`,\n"
        "`--out bench/results/tuners/new.json`, `git show 2b33679:bench/results/tuners-old.md`\n"
        "gone `bench/results/tuners-dev.md`, `bench/results/tuners/dev.{json,png}`\n"
    )
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert named_but_missing("p.md") == [
        "p.md:3: names bench/results/tuners-dev.md, which is not there",
        "p.md:3: names bench/results/tuners/dev.{json,png}, which is not there",
    ]
