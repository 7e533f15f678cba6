"""Toolchain staleness: version comparison, evidence status, the discount, hand-computed.

The recorded versions are those of the H200 trajectories in bench/results/h200 (triton 3.6.0,
torch 2.11.0+cu130, CUDA 13.0), read from the files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.retrieval.toolchain import (
    ToolchainEvidence,
    ToolchainPolicy,
    compare,
    newest_versions,
    parse_toolchain,
    same_version,
    scope_weights,
    staleness,
    version_parts,
)
from tunemem.retrieval.values import ScopeStats, value_estimate

H200 = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200" / "gemm.jsonl"
CHAIN = ["chip:h200", "family:nvidia-hopper", "backend:cuda", "global"]
POLICY = ToolchainPolicy()


@pytest.fixture(scope="module")
def recorded() -> dict[str, str]:
    first = json.loads(H200.read_text().splitlines()[0])
    return first["context"]["toolchain"]


def test_recorded_versions_are_what_the_h200_runs_used(recorded: dict[str, str]) -> None:
    assert recorded["triton"] == "3.6.0" and recorded["torch"].startswith("2.11")
    assert version_parts(recorded["torch"]) == (2, 11, 0)
    assert version_parts(recorded["cuda"]) == (13, 0)
    assert version_parts("nightly") is None


@pytest.mark.parametrize(
    ("a", "b", "depth", "same"),
    [
        ("3.6.0", "3.6.1", "minor", True),
        ("3.6.0", "3.6.1", "patch", False),
        ("3.6.0", "3.1.0", "minor", False),
        ("3.6.0", "3.1.0", "major", True),
        ("3.6", "3.6.2", "patch", True),  # a less precise version matches its prefix
        ("2.11.0+cu130", "2.11.0+cu128", "patch", True),  # the local build is not the release
        ("3.6.0", "4.0.0", "ignore", True),
        ("nightly", "nightly", "major", True),
        ("nightly", "3.6.0", "major", False),
    ],
)
def test_same_version(a: str, b: str, depth: str, same: bool) -> None:
    assert same_version(a, b, depth) is same


def test_compare_uses_the_compilers_of_the_backend(recorded: dict[str, str]) -> None:
    # torch and python do not matter by default: a newer torch leaves the evidence current.
    assert compare(recorded, {"triton": "3.6.2", "torch": "2.12.0"}, "cuda", POLICY).status == (
        "current"
    )
    newer = compare(recorded, {"triton": "3.7.0"}, "cuda", POLICY)
    assert newer.status == "superseded"
    assert [(c.component, c.evidence, c.current) for c in newer.changed] == [
        ("triton", "3.6.0", "3.7.0")
    ]
    assert compare(recorded, {"cuda": "12.8"}, "cuda", POLICY).status == "superseded"
    # Nothing that matters is named on both sides: unknown, not current.
    assert compare(recorded, {"torch": "2.12.0"}, "cuda", POLICY).status == "unknown"
    assert compare({}, {"triton": "3.6.0"}, "cuda", POLICY).status == "unknown"
    # ROCm matters on HIP, not CUDA's toolkit.
    assert compare({"cuda": "12.8"}, {"cuda": "13.0"}, "hip", POLICY).status == "unknown"
    # A setting makes torch's minor version matter on CUDA.
    strict = ToolchainPolicy.with_overrides({"cuda": {"torch": "minor"}})
    assert compare(recorded, {"torch": "2.12.0"}, "cuda", strict).status == "superseded"
    # No backend: every backend's components, at the strictest depth.
    assert compare({"rocm": "6.2"}, {"rocm": "6.4"}, None, strict).status == "superseded"
    assert POLICY.depths(None)["triton"] == "minor" and "torch" not in POLICY.depths(None)
    loose = ToolchainPolicy.with_overrides({"cuda": {"triton": "major"}})
    assert compare(recorded, {"triton": "3.7.0"}, "cuda", loose).status == "current"


def test_discount_hand_computed(recorded: dict[str, str]) -> None:
    """Chip: 2 outcomes under triton 3.6.0 (q 0.8); global: those 2 and 4 under 3.1.0 (q 0.5).

    With kappa 2, Q0 0 and superseded weight 0.5, global counts 2 + 0.5 * 4 = 4 observations:
    V_global = 4 * 0.5 / (4 + 2) = 1/3; V_chip = (2 * 0.8 + 2 * 1/3) / (2 + 2) = 0.56667.
    Undiscounted: V_global = 6 * 0.5 / 8 = 0.375, V_chip = (1.6 + 0.75) / 4 = 0.5875.
    """
    old = {**recorded, "triton": "3.1.0"}
    evidence = {
        "chip:h200": [ToolchainEvidence(recorded, 2)],
        "global": [ToolchainEvidence(recorded, 2), ToolchainEvidence(old, 4)],
    }
    weights = scope_weights(evidence, {"triton": "3.6.0"}, "cuda", POLICY)
    assert weights == {"global": pytest.approx((2 + 0.5 * 4) / 6)}
    stats = {"chip:h200": ScopeStats(2, 0.8, 1.28), "global": ScopeStats(6, 0.5, 1.5)}
    plain = value_estimate(CHAIN, stats, q0=0.0, kappa=2.0)
    discounted = value_estimate(CHAIN, stats, q0=0.0, kappa=2.0, evidence_weight=weights)
    assert plain.value == pytest.approx(0.5875)
    assert discounted.value == pytest.approx((1.6 + 2 / 3) / 4)
    assert discounted.weights["global"] == pytest.approx(0.5 * 4 / 6)
    assert discounted.n_total == plain.n_total == 8  # counts stay counts
    assert discounted.ci_high - discounted.ci_low > plain.ci_high - plain.ci_low
    # No toolchain named: nothing is discounted.
    assert scope_weights(evidence, {}, "cuda", POLICY) == {}


def test_stale_until_tried_under_the_new_toolchain(recorded: dict[str, str]) -> None:
    old = {"triton": "3.1.0", "torch": "2.5.1"}
    source = ToolchainEvidence(old, 0, source=True)
    outcomes = ToolchainEvidence(old, 3)
    before = staleness([source, outcomes], recorded, "cuda", POLICY)
    assert before.stale
    assert [v.status for v in before.evidence] == ["superseded", "superseded"]
    assert before.evidence[0].changed[0].evidence == "3.1.0"
    after = staleness([source, outcomes, ToolchainEvidence(recorded, 1)], recorded, "cuda", POLICY)
    assert not after.stale
    # Evidence whose toolchain was never recorded cannot be superseded.
    assert not staleness([ToolchainEvidence({}, 5)], recorded, "cuda", POLICY).stale
    assert not staleness([source], {}, "cuda", POLICY).stale


def test_newest_versions_and_parsing(recorded: dict[str, str]) -> None:
    seen = [{"triton": "3.1.0", "torch": "2.5.1"}, recorded, {"triton": "3.10.0"}]
    newest = newest_versions(seen)
    assert newest["triton"] == "3.10.0" and newest["torch"] == recorded["torch"]
    assert parse_toolchain(["triton=3.6", " Torch = 2.11 "]) == {"triton": "3.6", "torch": "2.11"}
    for bad in (["triton"], ["=3.6"], ["triton="]):
        with pytest.raises(ValueError, match="component=version"):
            parse_toolchain(bad)
    with pytest.raises(ValueError, match="valid depths"):
        ToolchainPolicy.with_overrides({"cuda": {"triton": "minorr"}})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ToolchainPolicy(superseded_weight=1.5)
