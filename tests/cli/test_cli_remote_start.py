"""A command through `--url` imports only the HTTP client, the API models and its own command
group: the store's modules (SQLAlchemy, alembic, Chroma, the embedder), pydantic-settings,
numpy (the value estimate's numerics) and the other command groups cost it start-up for
nothing (4.5-8 s a command, 3.5 s of it importing the store; then 0.85 s for numpy and every
group's module and click commands)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tunemem.cli.common import environment_api_key
from tunemem.memory_service.core.settings import Settings

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "pydantic_settings",
    "chromadb",
    "onnxruntime",
    "torch",
    "tunemem.memory_service.service",
    "tunemem.memory_service.core.sql.store",
    "numpy",
    "tunemem.retrieval.generalised",
    "tunemem.agent_client",
    "tunemem.cli.bench",
    "tunemem.cli.tune",
    "tunemem.cli.agent",
)
PROBE = """
import json, sys
from tunemem.cli.app import main
heavy_names = sys.argv[0]
sys.argv = ["tunemem", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
names = heavy_names.split(",")
heavy = sorted({n for n in names for m in sys.modules if m == n or m.startswith(n + ".")})
print(json.dumps({"code": code, "heavy": heavy}))
"""


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize(
    "command",
    [
        ["lessons", "list"],
        ["lessons", "show", "abc123"],
        ["retrieve", "--op", "convolution", "--chip", "a100", "-q", "tile"],
        ["report", "r1", "--compiled", "--correct", "--latency-ms", "1"],
        ["audit", "transfer"],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_a_remote_command_imports_no_store(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE.replace("sys.argv[0]", repr(",".join(HEAVY))),
            *command,
            "--url",
            closed_port_url(),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "cannot reach" in done.stderr, done.stderr  # it did try the server
    assert result["code"] != 0
    assert result["heavy"] == [], f"tunemem {' '.join(command)} --url imported {result['heavy']}"


@pytest.mark.parametrize(
    "environment",
    [{}, {"TUNEMEM_API_KEY": "k-1"}, {"tunemem_api_key": "k-2"}, {"TUNEMEM_API_KEY": ""}],
)
def test_the_environment_key_is_the_settings_key(environment, monkeypatch) -> None:
    for name in [name for name in os.environ if name.upper() == "TUNEMEM_API_KEY"]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert environment_api_key() == (Settings().api_key or None)
