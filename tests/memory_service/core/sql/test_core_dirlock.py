"""One process owns an embedded data directory: a second process is refused with the owner's
pid and the --url to use, changes nothing, and gets the directory once the owner is gone."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.dir_lock import DataDirInUse, read_owner
from tunemem.memory_service.core.sql.tables import Outcome
from tunemem.memory_service.service import MemoryService

REPO_ROOT = Path(__file__).resolve().parents[4]
URL = "http://127.0.0.1:8599"

OWNER = """
import sys
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.service import MemoryService
service = MemoryService(Settings(data_dir=sys.argv[1], embedder="hashing"))
service.store.advertise(sys.argv[2])
print("ready", flush=True)
sys.stdin.read()
service.close()
"""


def _settings(data_dir: Path, **overrides: object) -> Settings:
    return Settings(data_dir=data_dir, embedder="hashing", **overrides)


@pytest.fixture
def owner(tmp_path):
    """Another process owning tmp_path/store, serving (so it says) URL."""
    data_dir = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(data_dir), URL],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield data_dir, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def test_second_process_is_refused_with_pid_and_url(owner):
    data_dir, proc = owner
    assert read_owner(data_dir)["pid"] == proc.pid
    with pytest.raises(DataDirInUse) as refused:
        MemoryService(_settings(data_dir))
    assert refused.value.pid == proc.pid and refused.value.url == URL
    assert f"process {proc.pid}" in str(refused.value) and f"--url {URL}" in str(refused.value)


def test_cli_is_refused_and_writes_nothing(owner):
    data_dir, proc = owner
    env = {"TUNEMEM_EMBEDDER": "hashing"}
    runner = CliRunner()
    for args in (
        ["report", "no-such-retrieval", "--correct", "--latency-ms", "1"],
        ["lessons", "list"],
        ["export", str(data_dir.parent / "bundle.jsonl.gz")],
    ):
        result = runner.invoke(cli_app, [*args, "--data-dir", str(data_dir)], env=env)
        assert result.exit_code == 1, result.output
        assert str(proc.pid) in result.output and f"--url {URL}" in result.output
    assert not (data_dir.parent / "bundle.jsonl.gz").exists()
    proc.stdin.close()  # the owner closes its service and exits
    proc.wait(timeout=30)
    service = MemoryService(_settings(data_dir))  # now this process owns it
    with Session(service.engine) as session:
        assert session.exec(select(func.count()).select_from(Outcome)).one() == 0
    service.close()


def test_a_killed_owner_leaves_the_directory_free(owner):
    data_dir, proc = owner
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    probe = [sys.executable, "-c", OWNER, str(data_dir), URL]
    freed = subprocess.run(probe, cwd=REPO_ROOT, input="", capture_output=True, text=True)
    assert freed.returncode == 0 and freed.stdout.strip() == "ready", freed.stderr


def test_services_in_one_process_share_the_lock(tmp_path):
    data_dir = tmp_path / "store"
    first = MemoryService(_settings(data_dir))
    second = MemoryService(_settings(data_dir))
    first.close()
    probe = [sys.executable, "-c", OWNER, str(data_dir), URL]
    refused = subprocess.run(probe, cwd=REPO_ROOT, input="", capture_output=True, text=True)
    assert refused.returncode != 0 and "DataDirInUse" in refused.stderr  # still held by second
    second.close()
    freed = subprocess.run(probe, cwd=REPO_ROOT, input="", capture_output=True, text=True)
    assert freed.returncode == 0 and freed.stdout.strip() == "ready"


def test_server_mode_takes_no_lock(tmp_path):
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    settings = _settings(tmp_path / "store", database_url=database, index="memory")
    first = MemoryService(settings)
    second = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tunemem.memory_service.core.settings import Settings;"
            "from tunemem.memory_service.service import MemoryService;"
            "MemoryService(Settings(data_dir=sys.argv[1], database_url=sys.argv[2],"
            " index='memory', embedder='hashing')).close(); print('opened')",
            str(tmp_path / "store"),
            database,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    first.close()
    assert second.returncode == 0 and second.stdout.strip() == "opened", second.stderr


def test_serve_is_refused_with_the_running_server_not_a_url_flag(owner):
    """`serve` has no --url: its refusal names the server already running (issue 31)."""
    data_dir, proc = owner
    result = CliRunner().invoke(
        cli_app,
        ["serve", "--port", "8600", "--data-dir", str(data_dir)],
        env={"TUNEMEM_EMBEDDER": "hashing"},
    )
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "--url" not in text
    assert f"already serves it on {URL}" in text and str(proc.pid) in text
    assert "--data-dir" in text  # how to serve a second store instead
    proc.stdin.close()
