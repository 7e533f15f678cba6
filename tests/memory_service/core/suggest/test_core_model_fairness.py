"""The model-build queue under a greedy tenant (issue 39, case 5): builds take turns between
tenants, and a tenant has at most `per_tenant` builds waiting, so one asking about many
parameter sets delays another's first model by one build, not by its whole queue.

The builds are SYNTHETIC (a sleep that records its family); no store is read."""

from __future__ import annotations

import threading
import time

from tunemem.memory_service.core.suggest.perf_model_cache import PerformanceModels


def test_a_greedy_tenant_delays_another_by_one_build_at_most(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    models = PerformanceModels(store=None, wait_s=0.0, per_tenant=2)  # type: ignore[arg-type]
    order: list[tuple[str, tuple[str, ...]]] = []
    gate = threading.Event()

    def build(key, fingerprint):  # type: ignore[no-untyped-def]
        gate.wait(10)
        order.append((key[0], key[2]))
        time.sleep(0.01)
        return None

    monkeypatch.setattr(models, "fingerprint", lambda tenant, op: (1, 1, "synthetic"))
    monkeypatch.setattr(models, "_build", build)
    try:
        for i in range(200):  # 200 cheap suggests, each with parameter names of its own
            assert models.get("greedy", "softmax", [f"p{i}"]) is None
        assert models.get("calm", "softmax", ["BLOCK"]) is None
        gate.set()
        deadline = time.monotonic() + 30
        while ("calm", ("BLOCK",)) not in order and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
    finally:
        models.close()
    assert ("calm", ("BLOCK",)) in order
    # The first greedy build was running, at most one more came before the calm one.
    assert order.index(("calm", ("BLOCK",))) <= 2, order
    # The greedy tenant's 200 families cost at most its running build and its queue.
    assert sum(1 for tenant, _ in order if tenant == "greedy") <= 1 + 2, order
