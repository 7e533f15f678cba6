"""Keys fail closed and the write quota holds across workers (issue #22, defects 8 and 9).

A store that once had keys stays keyed: revoking the last key leaves every keyless request
refused, until `tunemem keys open` says otherwise. The per-key write quota is counted in the
SQL store, so the workers of one store share it."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app
from tunemem.memory_service.http.app import create_app

LESSON = {"kind": "insight", "text": "x", "applicability": {"op": "softmax"}}


def lesson(text: str) -> dict:
    return {"lessons": [{**LESSON, "text": text}]}


def test_revoking_the_last_key_keeps_the_store_keyed(make_service, tmp_path: Path):
    data_dir = tmp_path / "store"
    service = make_service(data_dir)
    row, secret = service.create_key("admin", name="only key")
    with TestClient(create_app(service)) as client:
        assert client.get("/v1/lessons").status_code == 401
        service.revoke_key(row.id)
        keyless = client.get("/v1/lessons")
        assert keyless.status_code == 401, "revoking the last key re-opened the store"
        assert "keys open" in keyless.json()["message"]
        revoked = client.get("/v1/lessons", headers={"Authorization": f"Bearer {secret}"})
        assert revoked.status_code == 401
    runner = CliRunner()
    other, _ = service.create_key("reader")
    refused = runner.invoke(cli_app, ["keys", "open", "--data-dir", str(data_dir)])
    assert refused.exit_code != 0 and other.id in refused.output  # a live key: not opened
    service.revoke_key(other.id)
    opened = runner.invoke(cli_app, ["keys", "open", "--data-dir", str(data_dir)])
    assert opened.exit_code == 0, opened.output
    with TestClient(create_app(service)) as client:
        assert client.get("/v1/lessons").status_code == 200
        service.create_key("agent")  # a new key closes it again
        assert client.get("/v1/lessons").status_code == 401


def test_the_write_quota_is_shared_by_the_workers_of_one_store(make_service, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    workers = [
        make_service(
            tmp_path / f"worker-{i}", database_url=url, index="memory", write_rate_per_minute=4
        )
        for i in range(2)
    ]
    _, secret = workers[0].create_key("agent", tenant="lab")
    headers = {"Authorization": f"Bearer {secret}"}
    statuses = []
    with TestClient(create_app(workers[0])) as a, TestClient(create_app(workers[1])) as b:
        for i in range(8):
            client = (a, b)[i % 2]
            statuses.append(
                client.post("/v1/lessons", json=lesson(f"l{i}"), headers=headers).status_code
            )
    assert statuses.count(201) == 4, statuses
    assert statuses[4:] == [429] * 4
    assert workers[1].counts("lab")["lessons"] == 4


def test_a_store_keyed_before_the_rule_stays_keyed_after_the_upgrade(tmp_path: Path):
    """Migration 0004 marks a store keyed when it holds any key, revoked ones included."""
    from sqlalchemy import create_engine, text
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import Unauthorized, authenticate
    from tunemem.memory_service.core.sql.store import migrate

    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    migrate(engine, "0003")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO apikey (id, tenant, role, name, key_hash, created_at, revoked) "
                "VALUES ('k1', 'default', 'admin', '', 'h', '2026-01-01 00:00:00', 1)"
            )
        )
    migrate(engine)
    with Session(engine) as session:
        try:
            authenticate(session, None, "127.0.0.1", "default")
        except Unauthorized:
            pass
        else:
            raise AssertionError("a store whose only key was revoked opened on upgrade")
    fresh = create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    migrate(fresh)
    with Session(fresh) as session:
        assert authenticate(session, None, "127.0.0.1", "default") == ("default", "operator")
