"""The agent's `--task` recordings are replays (issue 36): the run and its outcomes are stored
as replayed, with no device, never as a measurement on the chip they name."""

from __future__ import annotations

from sqlmodel import select

from tunemem.ingest.samples import SAMPLES_DIR, TARGETS_DIR
from tunemem.memory_service.core.sql.tables import Outcome, Trajectory

from .test_agent_client_kernel_tuner import live  # noqa: F401


def test_a_replayed_agent_run_is_stored_as_replayed(live) -> None:  # noqa: F811
    from tunemem.agent_client.run import run_agent

    url, service = live([SAMPLES_DIR / "kerneltuner" / "convolution"])
    result = run_agent(url, TARGETS_DIR / "convolution", "w6600", 4, plateau=0)
    assert result.trajectory["provenance"]["origin"] == "replayed"
    with service.store.session() as session:
        runs = [t for t in session.exec(select(Trajectory)) if t.source.startswith("agent-run:")]
        outcomes = list(session.exec(select(Outcome)))
    assert [(t.chip, t.origin, t.coverage, t.device_reported) for t in runs] == [
        ("w6600", "replayed", "partial", None)
    ]
    assert outcomes and {(o.origin, o.device_reported) for o in outcomes} == {("replayed", None)}
