"""`tunemem --version`, and help that shows no type for flags and the defaults of options."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from tunemem.cli.app import app, tunemem_version

runner = CliRunner()


def test_version_prints_the_installed_version():
    shown = runner.invoke(app, ["--version"])
    assert shown.exit_code == 0
    assert shown.output.strip() == f"tunemem {tunemem_version()}"
    assert tunemem_version() == version("tunemem")


def test_flags_show_no_type_and_options_their_defaults():
    for command in (["--help"], ["retrieve", "--help"], ["report", "--help"], ["serve", "--help"]):
        shown = runner.invoke(app, command)
        assert shown.exit_code == 0
        assert "<bool>" not in shown.output, command
    retrieve = runner.invoke(app, ["retrieve", "--help"]).output
    assert "[default: draft]" in retrieve and "<str>" in retrieve


def test_counts_print_in_words():
    from tunemem.cli.bundles import counts_text

    words = counts_text({"lesson": 816, "trajectory": 2, "retrieval": 1, "outcome": 0})
    assert words == "816 lessons, 2 trajectories, 1 retrieval, 0 outcomes"


def test_live_summary_prints_configurations_as_name_value():
    from tunemem.agent_client.live import config_text

    assert config_text({"BLOCK_N": 256, "num_warps": 4}) == "BLOCK_N=256 num_warps=4"


def test_learning_bench_prints_a_summary_and_its_outputs(capsys, tmp_path):
    from tunemem.cli.bench import print_learning_summary

    report = {
        "protocol": "lifelong",
        "elapsed_s": 12.5,
        "summary": {
            "similarity": {"1": 0.5, "5": 0.75, "top_3": 0.6, "first_attempt_feasible": 1.0},
            "default": {"1": 0.55, "5": 0.8, "top_3": 0.65, "first_attempt_feasible": 0.9},
        },
    }
    out = tmp_path / "sample.json"
    print_learning_summary(report, out)
    shown = capsys.readouterr().out
    assert "@5" in shown and "0.800" in shown and "0.750" in shown and "@20" not in shown
    assert str(out) in shown and str(out.with_suffix(".md")) in shown
    assert str(out.with_suffix(".png")) in shown


def test_a_long_step_is_never_silent(capsys):
    import time

    from tunemem.cli.common import with_heartbeat

    assert with_heartbeat("waiting", lambda: time.sleep(0.35) or 7, every=0.1) == 7
    beats = [line for line in capsys.readouterr().err.splitlines() if "still waiting" in line]
    assert 2 <= len(beats) <= 4
