"""The one Markdown table renderer of the benchmark reports (`bench.common.markdown`)."""

from __future__ import annotations

from tunemem.bench.common.markdown import cell, table


def test_a_table_is_its_header_rule_and_rows_in_either_rule_style() -> None:
    rows = [("a", 1), ("b", 2)]
    assert table(("goal", "n"), rows) == ["| goal | n |", "| --- | --- |", "| a | 1 |", "| b | 2 |"]
    assert table(("goal", "n"), rows, compact=True)[1] == "|---|---|"


def test_cells_show_nothing_as_a_dash_and_floats_to_fixed_digits() -> None:
    assert (cell(None), cell(0.12345), cell(2.5, 1), cell(7), cell("x")) == (
        "-",
        "0.123",
        "2.5",
        "7",
        "x",
    )
