"""`tunemem ingest --url` with a file too large for one upload (issue 39, case 6): batches are
bounded in bytes as well as in count, a batch the server refuses as too large is sent again in
halves, a trajectory too large alone is sent again gzip-compressed (stored as the embedded
ingest stores it), and one too large even so becomes a reject saying how to get it in, while
the rest go on.

The server is the app over real HTTP with a small body limit, so that SYNTHETIC runs of a few
hundred attempts play the part of a Kernel Tuner cache of 17,000 configurations.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.http.app import create_app

LIMIT = 64 * 1024


@pytest.fixture
def small_server(make_service) -> Iterator[tuple[str, object]]:  # type: ignore[no-untyped-def]
    yield from _serve(make_service(max_body_bytes=LIMIT))


@pytest.fixture
def tiny_inflate_server(make_service) -> Iterator[tuple[str, object]]:  # type: ignore[no-untyped-def]
    yield from _serve(make_service(max_body_bytes=LIMIT, max_inflated_body_bytes=2 * LIMIT))


def _serve(service) -> Iterator[tuple[str, object]]:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}", service
    server.should_exit = True
    thread.join(timeout=10)


def run(name: str, n: int) -> TrajectoryRecord:
    """SYNTHETIC: n attempts of a two-parameter space."""
    return TrajectoryRecord(
        source_format="native",
        source=f"synthetic/{name}",
        task=TaskSpec(op="softmax", kernel=f"softmax_{name}"),
        context=ContextSpec(chip="h100", backend="cuda"),
        attempts=[
            AttemptRecord(index=i, params={"BLOCK": 16 * (i + 1), "W": i % 4}, latency_ms=1 + i)
            for i in range(n)
        ],
        synthetic=True,
    )


def _folder(tmp_path, huge: int):  # type: ignore[no-untyped-def]
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a-small.jsonl").write_text(json.dumps(run("a", 5).to_dict()) + "\n")
    big = [run(f"big{i}", 3) for i in range(3)] + [run("huge", huge)]
    (folder / "b-big.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in big))
    (folder / "c-small.jsonl").write_text(json.dumps(run("c", 5).to_dict()) + "\n")
    return folder


def test_a_run_too_large_for_one_upload_is_sent_compressed_and_stored_whole(small_server, tmp_path):
    url, service = small_server
    folder = _folder(tmp_path, 1500)
    assert len(json.dumps(run("huge", 1500).to_dict())) > 2 * LIMIT  # past the body limit
    rejects = tmp_path / "rejects.jsonl"
    args = ["ingest", str(folder), "--url", url, "--quiet", "--rejects", str(rejects)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert service.counts()["trajectories"] == 6  # a, the three small ones and the huge of b, c
    assert not rejects.exists() or not rejects.read_text().strip()
    from sqlmodel import Session, select

    from tunemem.memory_service.core.sql.tables import Trajectory

    with Session(service.engine) as session:  # type: ignore[attr-defined]
        huge = session.exec(select(Trajectory).where(Trajectory.source == "synthetic/huge")).one()
    assert huge.n_attempts == 1500  # one run, whole: not split into runs of its parts


def test_a_run_too_large_even_compressed_is_a_reject_and_the_rest_go_on(
    tiny_inflate_server, tmp_path
):
    url, service = tiny_inflate_server
    folder = _folder(tmp_path, 3000)
    rejects = tmp_path / "rejects.jsonl"
    args = ["ingest", str(folder), "--url", url, "--quiet", "--rejects", str(rejects)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert service.counts()["trajectories"] == 5  # a, the three small ones of b, and c
    (reject,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert reject["path"] == "synthetic/huge"
    for words in ("without --url", "TUNEMEM_MAX_BODY_BYTES", "TUNEMEM_MAX_INFLATED_BODY_BYTES"):
        assert words in reject["reason"], reject["reason"]
    assert "rejected 1" in done.output
