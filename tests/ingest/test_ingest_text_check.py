"""The text check of records and requests (`ingest.validate.strings_problem`): its fast path
(one orjson pass) answers exactly as the walk that names the place, on any shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tunemem.ingest.validate import _all_text, _walk_problem, strings_problem

# Text with the characters that matter: NUL, a lone surrogate, a backslash, non-ASCII.
TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\x00", "\ud800", "\\", "u", "0", " "]))


@dataclass
class Part:
    value: Any
    _private: Any = None  # orjson leaves such fields out; the check must not


def _values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        TEXT, st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.none()
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.tuples(inner, inner),
            st.dictionaries(st.one_of(TEXT, st.integers()), inner, max_size=4),
            st.builds(Part, inner, inner),
        ),
        max_leaves=12,
    )


@settings(max_examples=400, deadline=None)
@given(_values())
def test_the_fast_check_answers_as_the_walk(value: Any) -> None:
    assert strings_problem(value, "record") == _walk_problem(value, "record")


def test_a_nul_or_a_lone_surrogate_anywhere_is_found_and_placed() -> None:
    assert strings_problem({"a": [Part("ok", {"k": "x\x00"})]}, "r") == (
        "r.a[0]._private.k holds a NUL character (U+0000), which cannot be stored"
    )
    assert "lone UTF-16 surrogate" in (strings_problem(("fine", "\ud800"), "r") or "")
    assert strings_problem({"text": "écrit \\u0000 littéralement", 3: [1.5, None]}, "r") is None
    # All text (the common case) is answered without the walk.
    assert _all_text([Part({"BLOCK_SIZE": 128, "name": "é"}, ("a", 1.0))])
