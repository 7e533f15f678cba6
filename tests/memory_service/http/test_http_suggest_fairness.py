"""Suggest slots per tenant (issue 39, case 5): one tenant holding as many suggests as it may
gets 429 `busy` for one more, while another tenant is still served."""

from __future__ import annotations

import threading
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.http.ratelimit import SuggestSlots

TASK = {"op": "softmax", "kernel": "softmax_rows"}
BODY = {"task": TASK, "space": {"params": {"BLOCK": [64, 128], "WARPS": [1, 2]}}, "k": 1}


def test_slots_are_shared_out_per_tenant() -> None:
    slots = SuggestSlots(total=4, per_tenant=2)
    assert slots.acquire("greedy") is None and slots.acquire("greedy") is None
    assert "this tenant" in (slots.acquire("greedy") or "")
    assert slots.acquire("calm") is None and slots.acquire("calm") is None
    assert "the server" in (slots.acquire("third") or "")
    slots.release("greedy")
    assert slots.acquire("third") is None


def test_a_greedy_tenant_leaves_the_other_its_suggests(make_service, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    service = make_service(suggest_concurrency=4, suggest_per_tenant=2)
    with Session(service.engine) as session:
        greedy = {"Authorization": f"Bearer {create_key(session, 'agent', 'greedy')[1]}"}
        calm = {"Authorization": f"Bearer {create_key(session, 'agent', 'calm')[1]}"}
    release, entered = threading.Event(), threading.Semaphore(0)
    real = service.suggest

    def slow(request, *, tenant=None):  # type: ignore[no-untyped-def]
        if tenant == "greedy":
            entered.release()
            release.wait(30)
        return real(request, tenant=tenant)

    monkeypatch.setattr(service, "suggest", slow)
    with TestClient(create_app(service)) as client:
        held: list[Any] = []
        threads = [
            threading.Thread(
                target=lambda: held.append(client.post("/v1/suggest", json=BODY, headers=greedy))
            )
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        assert entered.acquire(timeout=30) and entered.acquire(timeout=30)
        more = client.post("/v1/suggest", json=BODY, headers=greedy)
        assert more.status_code == 429 and more.json()["code"] == "busy"
        answers = [client.post("/v1/suggest", json=BODY, headers=calm) for _ in range(5)]
        release.set()
        for thread in threads:
            thread.join(30)
    assert [a.status_code for a in answers] == [200] * 5
    assert [h.status_code for h in held] == [200, 200]
