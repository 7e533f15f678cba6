"""The benchmarks' list options read every spelling their two entry points have taken."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tunemem.bench.autotune.run import parser as autotune_parser
from tunemem.bench.common.options import Listed, prog
from tunemem.bench.live.run import parser as live_parser
from tunemem.bench.moe.run import parser as moe_parser


def test_a_list_reads_commas_spaces_and_repeats_and_replaces_its_default() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--orders", action=Listed, item=int, default=[0])
    assert p.parse_args([]).orders == [0]
    assert p.parse_args(["--orders", "0,1,2"]).orders == [0, 1, 2]
    assert p.parse_args(["--orders", "0", "1", "2"]).orders == [0, 1, 2]
    assert p.parse_args(["--orders", "3", "--orders", "4,5"]).orders == [3, 4, 5]


def test_a_value_the_list_refuses_is_a_usage_error(capsys) -> None:
    p = argparse.ArgumentParser(prog="x")
    p.add_argument("--orders", action=Listed, item=int, what="seeds")
    with pytest.raises(SystemExit) as exit_:
        p.parse_args(["--orders", "0,first"])
    assert exit_.value.code == 2
    assert "argument --orders: takes seeds, not '0,first'" in capsys.readouterr().err


def test_the_benchmarks_read_both_spellings() -> None:
    assert autotune_parser().parse_args(["--orders", "1,2"]).orders == [1, 2]
    assert autotune_parser().parse_args(["--orders", "1", "2"]).orders == [1, 2]
    live = live_parser()
    merged = live.parse_args(["--merge", "a.json", "--merge", "b.json"]).merge
    assert merged == [Path("a.json"), Path("b.json")]
    assert live.parse_args(["--merge", "a.json", "b.json"]).merge == merged
    assert live.parse_args([]).resweep is True
    assert live.parse_args(["--no-resweep"]).resweep is False
    assert live.parse_args(["--resweep"]).resweep is True
    cases = moe_parser().parse_args(["--cases", "a,b"]).cases
    assert cases == ["a", "b"] == moe_parser().parse_args(["--cases", "a", "b"]).cases


def test_the_usage_names_the_command_it_was_called_as() -> None:
    assert prog("live", None) == "python -m tunemem.bench.live"
    assert prog("live", ["--budget", "3"]) == "tunemem bench live"
    assert live_parser(prog("live", [])).prog == "tunemem bench live"
