"""Every shell and Python block of the README and of the quickstart pages runs as printed.

One fresh store is seeded and served (as `make run` does) on a free port; the blocks of each
page then run in order, in a scratch directory that holds the clone's files by symbolic link,
with two substitutions only: the server's address for `http://127.0.0.1:8000`, and this test's
virtual environment for `.venv/bin/`. A line `make run ...` is dropped: the test's server
stands in for it. Python blocks run twice, as a reader who reruns an example would. A block
preceded by `<!-- docs-test: skip REASON -->` is not run (a GPU, a second store, a server that
never returns); one preceded by `<!-- docs-test: needs-data -->` runs only when the optional
data set is beside the clone (`../shared/data`, which a block names `$DATA`).

Pages with blocks that the quickstart does not cover (operations, benchmarks, development) are
checked for the same markers and the same CLI spelling, not run.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
RUN_PAGES = [
    "README.md",
    "docs/agent.md",
    "docs/ingest.md",
    "docs/ranking.md",
    "docs/platforms.md",
    "docs/kernel-tuner.md",
    "docs/api.md",
    "docs/vllm.md",
    "docs/sglang.md",
    "docs/mcp.md",
]
ALL_PAGES = sorted(["README.md", *(str(p.relative_to(REPO)) for p in REPO.glob("docs/*.md"))])
BLOCK = re.compile(
    r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S
)


def blocks(page: str) -> list[tuple[str, str, str]]:
    """(language, body, marker) of each sh / python block of a page, in order."""
    text = (REPO / page).read_text()
    return [
        (m["lang"], m["body"], (m["mark"] or "").strip())
        for m in BLOCK.finditer(text)
        if m["lang"] in ("sh", "python")
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A seeded store served by `tunemem serve --seed`, and a scratch clone to run blocks in."""
    work = tmp_path_factory.mktemp("docs")
    clone = work / "clone"
    clone.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in (".git", ".venv", ".tunemem"):
            (clone / entry.name).symlink_to(entry)
    if SHARED_DATA.exists():
        (work / "shared").symlink_to(SHARED_DATA.parent)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "TUNEMEM_DATA_DIR": str(clone / ".tunemem"),
        "TMPDIR": str(work),
        "DATA": str(SHARED_DATA),
    }
    env.pop("TUNEMEM_API_KEY", None)
    log = (work / "serve.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tunemem.cli",
            "serve",
            "--seed",
            "--port",
            str(port),
        ],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, (work / "serve.log").read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not answer within 300 s"
            time.sleep(1)
        yield {"url": url, "clone": clone, "env": env}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def as_run(body: str, url: str) -> str:
    """The block with the server's address and this test's virtual environment substituted."""
    lines = [line for line in body.splitlines() if not line.startswith("make run")]
    text = "\n".join(lines)
    text = text.replace("http://127.0.0.1:8000", url).replace("localhost:8000", url)
    return text.replace(".venv/bin/", f"{Path(sys.executable).parent}/")


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_blocks_run_as_printed(page: str, served) -> None:
    ran = 0
    for lang, body, mark in blocks(page):
        if mark.startswith("skip"):
            continue
        if mark == "needs-data" and not SHARED_DATA.exists():
            continue
        script = as_run(body, served["url"])
        if lang == "sh":
            command = ["bash", "-euo", "pipefail", "-c", script]
        else:
            command = [sys.executable, "-c", script]
        # A Python example runs twice: a reader runs it again (a fixed idempotency key, say,
        # would be refused the second time).
        for _ in range(2 if lang == "python" else 1):
            done = subprocess.run(
                command,
                cwd=served["clone"],
                env=served["env"],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, (
                f"{page}: this block failed ({done.returncode}):\n{body}\n"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
            )
        ran += 1
    assert ran, f"{page} has no block that runs"


@pytest.mark.parametrize("page", ALL_PAGES)
def test_pages_call_the_cli_one_way(page: str) -> None:
    """Commands are spelled `.venv/bin/tunemem`, and every skip says why."""
    for lang, body, mark in blocks(page):
        assert mark in ("", "needs-data") or re.fullmatch(r"skip \S.{5,}", mark), (page, mark)
        if lang != "sh":
            continue
        for line in body.splitlines():
            code = line.split("#", 1)[0]
            assert not re.search(r"(^|[\s;&|(])tunemem ", code), f"{page}: bare tunemem: {line}"


# A package `make run` does not install, the extra that holds it, and the make target for it.
NOT_IN_MAKE_RUN = {
    "kernel_tuner": ("tuners", "install-tuners"),
    "triton": ("kernels", "install-triton"),
}


@pytest.mark.parametrize("page", ALL_PAGES)
def test_pages_say_how_to_install_what_make_run_does_not(page: str) -> None:
    """A page whose examples import Kernel Tuner or Triton names the make target that installs
    it, and the target installs the extra that holds it (issue 31: both pages failed after
    `make run` with ModuleNotFoundError, and neither said how)."""
    makefile = (REPO / "Makefile").read_text()
    text = (REPO / page).read_text()
    for module, (extra, target) in NOT_IN_MAKE_RUN.items():
        imported = any(
            re.search(rf"^\s*(from|import) {module}\b", body, re.M)
            for lang, body, _ in blocks(page)
            if lang == "python"
        )
        if not imported:
            continue
        assert f"make {target}" in text, f"{page} imports {module} but never says `make {target}`"
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert recipe, f"the Makefile has no target {target}"
        assert re.search(rf"-e '\.\[[^\]]*\b{extra}\b", recipe[1]), (target, recipe[1])
