"""One definition of feasible (`ingest.records.is_feasible`): recorded attempts, runner results
and reported outcomes all use it."""

from __future__ import annotations

import itertools

import pytest

from tunemem.ingest.records import AttemptRecord, is_feasible
from tunemem.kernels.runners.base import EvalResult


@pytest.mark.parametrize(
    ("compiled", "correct", "error", "feasible"),
    [
        (True, True, None, True),
        (True, None, None, True),  # no check made (Kernel Tuner caches): its time counts
        (True, False, None, False),
        (True, True, "runtime", False),
        (True, None, "timeout", False),
        (False, None, None, False),
        (False, True, None, False),
    ],
)
def test_feasible_is_compiled_not_incorrect_and_no_error(
    compiled: bool, correct: bool | None, error: str | None, feasible: bool
) -> None:
    assert is_feasible(compiled, correct, error) is feasible


def test_records_and_runner_results_use_the_one_definition() -> None:
    for compiled, correct, category in itertools.product(
        (True, False), (True, False, None), (None, "compile", "runtime")
    ):
        expected = is_feasible(compiled, correct, category)
        attempt = AttemptRecord(0, {}, compiled=compiled, correct=correct, error_category=category)
        result = EvalResult(compiled=compiled, correct=correct, error_category=category)
        assert attempt.feasible is expected and result.feasible is expected
