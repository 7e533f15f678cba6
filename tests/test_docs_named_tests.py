"""The pages name the test behind each guarantee (docs/operations.md, "What is guaranteed");
a name that no longer exists (a test moved or renamed) leaves the guarantee with no check a
reader can find. Every test file and test function a page names in backquotes must exist
under tests/ (issue 39, done means)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def _named(page: Path) -> set[str]:
    spans = re.findall(r"`([^`\n]+)`", page.read_text())
    return {
        word.rstrip(",.;:")
        for span in spans
        for word in span.split()
        if re.fullmatch(r"(tests/)?[\w/]*test_\w+(\.py)?(::\w+)?", word.rstrip(",.;:"))
    }


def test_every_test_a_page_names_exists():
    files = {p.relative_to(REPO).as_posix() for p in TESTS.rglob("*.py")}
    file_names = {Path(f).name for f in files}
    source = "\n".join((REPO / f).read_text() for f in files)
    missing = []
    for page in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        for name in sorted(_named(page)):
            path, _, function = name.partition("::")
            if path.endswith(".py"):
                found = path in files if "/" in path else path in file_names
                if function:
                    found = found and f"def {function}(" in source
            else:
                found = f"def {path}(" in source
            if not found:
                missing.append(f"{page.relative_to(REPO)}: {name}")
    assert not missing, "pages name tests that do not exist:\n" + "\n".join(missing)
