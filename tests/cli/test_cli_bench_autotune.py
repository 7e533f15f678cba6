"""`tunemem bench autotune`: bad options are refused with a message and change nothing."""

from __future__ import annotations

from typer.testing import CliRunner

from tunemem.cli.app import app

runner = CliRunner()


def test_unknown_device_is_refused(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["bench", "autotune", "--device", "tpu", "--out", str(out)])
    assert result.exit_code == 2
    assert "argument --device: invalid choice: 'tpu'" in result.output
    assert not out.exists()


def test_help_names_the_drop_in_and_the_goal_inputs():
    result = runner.invoke(app, ["bench", "autotune", "--help"])
    assert result.exit_code == 0
    for option in ("--top-k", "--explore", "--full-only", "--full-from", "--rounds", "--cold"):
        assert option in result.output


def test_cold_orders_must_be_seeds(tmp_path):
    out = tmp_path / "out"
    args = ["bench", "autotune", "--cold", "--orders", "0,first", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 2
    assert "argument --orders: takes seeds (0,1,2 or 0 1 2), not '0,first'" in result.output
    assert not out.exists()
