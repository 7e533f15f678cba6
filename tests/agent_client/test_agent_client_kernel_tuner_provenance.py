"""The Kernel Tuner strategy says how its numbers were obtained (issue 36): a run in simulation
mode (`tune_cache`) is stored and reported as simulated, with no device, and as a partial run
unless it evaluated the whole valid space; the bundled caches it replays stay recorded and
complete."""

from __future__ import annotations

from sqlmodel import select

from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.memory_service.core.sql.tables import Outcome, Trajectory

from .test_agent_client_kernel_tuner import kernel_tuner, live, w6600_cache  # noqa: F401


def test_a_simulated_run_is_stored_as_simulated_and_partial(live, w6600_cache) -> None:  # noqa: F811
    from tunemem.agent_client.tuners.kernel_tuner import MemoryStrategy

    url, service = live([SAMPLES_DIR / "kerneltuner" / "convolution"])
    path, _ = w6600_cache
    strategy = MemoryStrategy(url=url, k=4)
    kernel_tuner.tune_cache(
        str(path), strategy=strategy, strategy_options={"max_fevals": 8}, quiet=True
    )
    with service.store.session() as session:
        runs = list(session.exec(select(Trajectory)))
        outcomes = list(session.exec(select(Outcome)))
    by_format = {t.source_format: t for t in runs}
    uploaded = by_format["native"]
    assert uploaded.chip == "w6600"  # the cache's device name still names the chip
    assert (uploaded.origin, uploaded.coverage, uploaded.device_reported) == (
        "simulated",
        "partial",
        None,
    )
    assert outcomes and {(o.origin, o.device_reported) for o in outcomes} == {("simulated", None)}
    assert {(t.origin, t.coverage) for t in runs if t.source_format == "kerneltuner"} == {
        ("recorded", "complete")
    }
