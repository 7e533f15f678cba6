"""`tune moe` stores only what it timed, and says how (issue 36, case 4): a run on a machine
that cannot time exits non-zero and uploads nothing; a replay is stored as replayed, never as
a measurement on the GPU it names; a device name the runtime contradicts is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select
from typer.testing import CliRunner

from tunemem.agent_client.tuners.moe import rounds as moe_rounds
from tunemem.agent_client.tuners.moe import tune as moe
from tunemem.agent_client.tuners.moe.tune import MoeShape, tune_moe
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.memory_service.core.sql.tables import Outcome, Trajectory

from .test_agent_client_moe import LANDSCAPE, SHAPE, live  # noqa: F401 (the live fixture)

CLI_ARGS = ["tune", "moe", "-E", "8", "-N", "14336", "--hidden", "4096", "--topk", "2"]


def stored(service) -> tuple[list[Trajectory], list[Outcome]]:
    with service.store.session() as session:
        return list(session.exec(select(Trajectory))), list(session.exec(select(Outcome)))


def test_cli_without_a_gpu_times_nothing_writes_nothing_sends_nothing(
    live,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's command: --device-name "NVIDIA H100" on a machine with no GPU."""
    from tunemem.cli.app import app

    monkeypatch.setattr(moe_rounds, "runtime_device_name", lambda: None, raising=False)
    monkeypatch.setattr(moe, "runtime_device_name", lambda: None, raising=False)
    url, service = live([SAMPLES_DIR / "vllm_fused_moe"])
    before = service.counts()
    args = [*CLI_ARGS, "--dtype", "fp8", "--batch-sizes", "1,64", "--budget", "3"]
    done = CliRunner().invoke(
        app, [*args, "--device-name", "NVIDIA H100", "--out", str(tmp_path / "out"), "--url", url]
    )
    assert done.exit_code != 0, done.output
    assert "nothing" in done.output and "timed" in done.output
    assert "best none ran" not in done.output
    assert not list((tmp_path / "out").glob("*.json"))  # no file of vLLM's defaults
    assert service.counts() == before  # no trajectory, no outcome


def test_a_run_whose_every_configuration_fails_raises_and_sends_nothing(
    live,  # noqa: F811
    tmp_path: Path,
) -> None:
    from tunemem.agent_client.tuners.moe.tune import NothingTimedError

    url, service = live([SAMPLES_DIR / "vllm_fused_moe"])
    before = service.counts()

    def broken(*_args):  # SYNTHETIC: a kernel that never runs
        raise RuntimeError("no kernel image is available for execution on the device")

    with pytest.raises(NothingTimedError, match="nothing was timed"):
        tune_moe(
            MoeShape(8, 14336, 4096, 2, "fp8_w8a8"),
            [1, 64],
            broken,
            memory_url=url,
            device_name="NVIDIA H100",
            budget=4,
            out=tmp_path / "out",
        )
    assert not list((tmp_path / "out").glob("*.json"))  # the folder is checked, no file
    assert service.counts() == before


def test_a_replay_is_stored_as_replayed_not_as_the_named_gpu_measurement(
    live,  # noqa: F811
    tmp_path: Path,
) -> None:
    from tunemem.kernels.moe_recorded import recorded_benchmark

    url, service = live([SAMPLES_DIR / "vllm_fused_moe"])
    benchmark, space, _ = recorded_benchmark(LANDSCAPE)
    tune_moe(
        SHAPE,
        [1, 64],
        benchmark,
        memory_url=url,
        device_name="NVIDIA H200",
        budget=14,
        space=space,
        out=tmp_path,
        replayed=True,
    )
    trajectories, outcomes = stored(service)
    runs = [t for t in trajectories if t.source.startswith("tunemem-tune-moe:")]
    assert runs and outcomes
    assert {(t.origin, t.coverage, t.device_reported) for t in runs} == {
        ("replayed", "partial", None)
    }
    assert {(o.origin, o.device_reported) for o in outcomes} == {("replayed", None)}
    shipped = [t for t in trajectories if t.source_format == "vllm-moe"]
    assert shipped and {t.origin for t in shipped} == {"shipped"}


def test_cli_replay_is_stored_as_replayed(live, tmp_path: Path) -> None:  # noqa: F811
    from tunemem.cli.app import app

    url, service = live([SAMPLES_DIR / "vllm_fused_moe"])
    args = [*CLI_ARGS, "--dtype", "fp8", "--batch-sizes", "1", "--budget", "4"]
    done = CliRunner().invoke(
        app,
        [*args, "--device-name", "NVIDIA H200", "--replay", str(LANDSCAPE)]
        + ["--out", str(tmp_path), "--url", url],
    )
    assert done.exit_code == 0, done.output
    runs = [t for t in stored(service)[0] if t.source.startswith("tunemem-tune-moe:")]
    assert runs and {t.origin for t in runs} == {"replayed"}


def test_a_device_name_the_runtime_contradicts_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(moe, "runtime_device_name", lambda: "NVIDIA H200", raising=False)
    timed: list[int] = []

    def benchmark(*_args):  # SYNTHETIC: never reached
        timed.append(1)
        return 10.0

    with pytest.raises(ValueError, match="H200"):
        tune_moe(SHAPE, [1], None, device_name="NVIDIA H100", budget=2, out=tmp_path / "out")
    assert not timed and not list((tmp_path / "out").glob("*.json"))
