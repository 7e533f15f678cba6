"""Conformance over store and index implementations: embedded (SQLite + Chroma directory,
SQLite + in-memory index) and server mode (PostgreSQL + Chroma's HTTP server).

Server-mode cases need a PostgreSQL server (TUNEMEM_TEST_PG_URL, default
postgresql+psycopg://postgres@127.0.0.1:5432/postgres) and a Chroma server
(TUNEMEM_TEST_CHROMA_URL, default http://127.0.0.1:8001); `.ci/run` starts both. Without them
those cases skip with the reason.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.service import MemoryService

PG_URL = os.environ.get(
    "TUNEMEM_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
CHROMA_URL = os.environ.get("TUNEMEM_TEST_CHROMA_URL", "http://127.0.0.1:8001")


def _pg_reachable() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_URL.replace("+psycopg", ""), connect_timeout=2):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        return f"PostgreSQL not reachable at {PG_URL}: {exc.__class__.__name__}"


def _chroma_reachable() -> str | None:
    import httpx

    try:
        httpx.get(f"{CHROMA_URL}/api/v2/heartbeat", timeout=2).raise_for_status()
        return None
    except Exception as exc:  # noqa: BLE001
        return f"Chroma server not reachable at {CHROMA_URL}: {exc.__class__.__name__}"


class ServerStore:
    """A fresh PostgreSQL database and Chroma collection per test, dropped afterwards."""

    def __init__(self) -> None:
        import psycopg

        self.name = f"tunemem_{uuid.uuid4().hex[:12]}"
        self._admin = psycopg.connect(PG_URL.replace("+psycopg", ""), autocommit=True)
        self._admin.execute(f"CREATE DATABASE {self.name}")
        base = PG_URL.rsplit("/", 1)[0]
        self.settings = dict(
            database_url=f"{base}/{self.name}",
            index="chroma-http",
            index_url=CHROMA_URL,
            index_collection=self.name,
        )

    def drop(self, services: list[MemoryService]) -> None:
        for service in services:
            service.close()
        try:
            services[0].index.reset()
        except Exception:  # noqa: BLE001 - best effort cleanup of a test collection
            pass
        self._admin.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
        self._admin.close()


@pytest.fixture(params=["sqlite+chroma", "sqlite+memory", "postgres+chroma-http"])
def open_store(request, tmp_path: Path, embedder) -> Iterator:
    """A factory of services ("workers") on one store of the parametrised kind."""
    services: list[MemoryService] = []
    server: ServerStore | None = None
    shared_index = None
    if request.param == "postgres+chroma-http":
        reason = _pg_reachable() or _chroma_reachable()
        if reason:
            pytest.skip(reason)
        server = ServerStore()
        overrides = server.settings
    elif request.param == "sqlite+memory":
        from tunemem.memory_service.core.vectors.base import MemoryIndex

        shared_index = MemoryIndex()
        overrides = {"data_dir": tmp_path / "store", "index": "memory"}
    else:
        overrides = {"data_dir": tmp_path / "store"}

    def factory() -> MemoryService:
        service = MemoryService(Settings(**overrides), embedder=embedder, index=shared_index)
        services.append(service)
        return service

    factory.kind = request.param  # type: ignore[attr-defined]
    yield factory
    if server:
        server.drop(services)
    else:
        for service in services:
            service.close()


LESSONS = [
    LessonCreate(
        kind="insight",
        text="Stage the convolution tile in shared memory to reuse loads",
        applicability={"op": "convolution", "chips": ["a100"], "backends": ["cuda"]},
    ),
    LessonCreate(
        kind="insight",
        text="Unroll the small filter loops completely in the convolution",
        applicability={"op": "convolution", "chips": ["a100"], "backends": ["cuda"]},
    ),
    LessonCreate(
        kind="failure",
        text="block_size_x=128 with tile_size_y=8 exceeds registers on MI250X",
        applicability={"op": "convolution", "chips": ["mi250x"], "backends": ["hip"]},
    ),
]


def ask(service: MemoryService, chip: str, stage: str = "draft"):
    return service.retrieve(
        RetrieveRequest(
            query="convolution tiling in shared memory",
            task={"op": "convolution"},
            context={"chip": chip},
            stage=stage,
            k=3,
        )
    )


def tell(service: MemoryService, retrieval, used: list[str], good: bool, key: str | None = None):
    return service.report(
        ReportRequest(
            retrieval_id=retrieval.retrieval_id,
            used=used,
            outcome={"compiled": True, "correct": good},
        ),
        idempotency_key=key,
    )


def test_store_conformance(open_store):
    service = open_store()
    created = service.add_lessons(LESSONS)
    assert len(created.created) == 3
    assert service.add_lessons(LESSONS[:1]).merged == created.ids[:1]
    a, b = created.ids[0], created.ids[1]
    for i in range(4):
        tell(service, ask(service, "a100"), [a], good=False, key=f"a-{i}")
        retrieval = ask(service, "a100")
        tell(service, retrieval, [b], good=True, key=f"b-{i}")
    assert tell(service, retrieval, [b], good=True, key="b-3").duplicate is True
    order = [lesson.id for lesson in ask(service, "a100").lessons]
    assert order.index(b) < order.index(a)
    table = service.value_table()
    assert service.rebuild_values() == 8
    assert service.value_table() == table
    assert service.reindex() == 3
    assert [lesson.id for lesson in ask(service, "a100").lessons] == order
    if open_store.kind != "sqlite+chroma":  # an embedded Chroma directory has one owner at a time
        second = open_store()
        assert second.value_table() == table
        assert [lesson.id for lesson in ask(second, "a100").lessons] == order


@pytest.mark.parametrize("open_store", ["postgres+chroma-http"], indirect=True)
def test_concurrent_workers_lose_no_update(open_store):
    """Several stateless API workers on one server-mode store: no report is lost."""
    workers = [open_store(), open_store()]
    lesson = workers[0].add_lessons(LESSONS[:1]).ids[0]
    errors: list[BaseException] = []

    def work(service: MemoryService, name: str) -> None:
        try:
            for i in range(10):
                tell(service, ask(service, "a100"), [lesson], good=i % 2 == 0, key=f"{name}-{i}")
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w, f"w{i}")) for i, w in enumerate(workers * 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    counts = {
        scope: n for lid, stage, scope, n, _q, _s in workers[1].value_table() if lid == lesson
    }
    assert counts == {"chip:a100": 40, "family:nvidia-ampere": 40, "backend:cuda": 40, "global": 40}
