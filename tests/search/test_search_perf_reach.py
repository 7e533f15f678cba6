"""The reach of the stored keys at a new key (`search.model.reach`), on hand-computed numbers.
Latencies are SYNTHETIC."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tunemem.search.model.pooled import KeyContext
from tunemem.search.model.reach import key_distance, key_reach, transfer_evidence

CHIP = (7.0, 5.0, 12.0, 6.0)


def key(m: float, n: float = 1024.0, dtype_bytes: float = 2.0, chip=CHIP) -> KeyContext:
    return KeyContext({"m": m, "n": n}, dtype_bytes, chip)


def test_distance_is_over_log2_sizes_both_keys_name_and_the_dtype_width() -> None:
    assert key_distance(key(64), key(4096)) == pytest.approx(6.0)
    assert key_distance(key(64, n=256), key(4096)) == pytest.approx(math.sqrt(36 + 4))
    assert key_distance(key(8, dtype_bytes=1.0), key(8)) == pytest.approx(1.0)
    # A size one key does not name, and the chip, are no part of it.
    only_m = KeyContext({"m": 8.0}, 2.0, (0.0, 0.0, 0.0, 0.0))
    assert key_distance(only_m, key(8)) == 0.0


def test_evidence_pairs_spaces_of_one_chip_over_what_both_measured() -> None:
    columns = np.array(
        [[0.0, 0.0, 3.0, 9.0], [1.0, 1.0, 2.0, 9.0], [2.0, 2.0, 1.0, 9.0], [3.0, 3.0, 0.0, 9.0]]
    )
    measured = np.ones_like(columns, dtype=bool)
    contexts = {
        "a": key(1),
        "b": key(2),  # ranks as a does: correlation 1 at distance 1
        "c": key(8),  # the reverse of a and b: correlation -1 at distances 3 and 2
        "other": key(4, chip=(6.0, 5.0, 11.0, 5.0)),  # another chip: no pair
    }
    evidence = transfer_evidence(columns, measured, ["a", "b", "c", "other"], contexts)
    assert sorted(evidence) == [(1.0, 1.0), (2.0, -1.0), (3.0, -1.0)]
    # Fewer than three configurations measured by both: no evidence.
    measured[:2, 2] = False
    assert sorted(transfer_evidence(columns, measured, ["a", "b", "c"], contexts)) == [(1.0, 1.0)]


def test_reach_is_the_evidence_at_least_as_far_as_the_key_and_zero_beyond_it() -> None:
    contexts = {"a": key(1), "b": key(2), "c": key(8)}
    evidence = [(1.0, 1.0), (2.0, 0.5), (3.0, -1.0)]
    assert key_reach(key(8), contexts, evidence) == 1.0  # a stored key
    assert key_reach(key(16), contexts, evidence) == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert key_reach(key(32), contexts, evidence) == pytest.approx(0.25)  # pairs 2 and 3 apart
    assert key_reach(key(4096), contexts, evidence) == 0.0  # 9 doublings: never seen carry
    assert key_reach(None, contexts, evidence) == 1.0
    assert key_reach(key(4096), {}, []) == 1.0


def test_the_evidence_is_bounded_in_pairs_whatever_the_memory_holds(monkeypatch) -> None:
    from tunemem.search.model import reach as perf_reach

    monkeypatch.setattr(perf_reach, "MAX_PAIRS", 5)
    rng = np.random.default_rng(0)
    labels = [f"k{m}" for m in range(8)]  # 28 pairs of one chip
    contexts = {label: key(2.0 ** (m + 1)) for m, label in enumerate(labels)}
    columns = rng.normal(size=(10, 8))
    evidence = transfer_evidence(columns, np.ones_like(columns, dtype=bool), labels, contexts)
    assert len(evidence) == 5
