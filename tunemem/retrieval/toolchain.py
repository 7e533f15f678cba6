"""Toolchain staleness: which evidence was gathered under the toolchain a context runs now.

Every piece of evidence (the run a lesson was distilled from, and each outcome) carries the
toolchain versions it was measured under ({"triton": "3.6.0", "torch": "2.11.0+cu130", ...}).
When a query names its toolchain, each piece is

- `current`: every component that matters for the backend and is named on both sides agrees
  to the depth that matters (default: major and minor version of the compiler);
- `superseded`: at least one such component differs;
- `unknown`: no component that matters is named on both sides (nothing to compare).

Superseded evidence counts as `superseded_weight` of an observation (a power-prior discount:
n outcomes under an old compiler weigh like w*n current ones), per scope of the value chain;
current and unknown evidence keep their full weight. A lesson is stale when some of its evidence
is superseded and none is current: an outcome under the new toolchain makes it current again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

DEPTHS = ("ignore", "major", "minor", "patch")
Status = Literal["current", "superseded", "unknown"]

# Compilers by backend: Triton for Triton kernels, and the vendor toolkit that compiles device
# code (CUDA's ptxas, ROCm's LLVM, CANN's compiler, oneAPI's icpx). torch, the driver and Python
# do not matter unless a setting says so.
DEFAULT_COMPONENTS: dict[str, dict[str, str]] = {
    "cuda": {"triton": "minor", "cuda": "minor"},
    "hip": {"triton": "minor", "rocm": "minor"},
    "ascend": {"cann": "minor"},
    "xpu": {"triton": "minor", "oneapi": "minor"},
    "cpu": {"triton": "minor"},
}
DEFAULT_SUPERSEDED_WEIGHT = 0.5

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


def version_parts(version: str) -> tuple[int, ...] | None:
    """The leading numeric release of a version: "2.11.0+cu130" -> (2, 11, 0); None when it
    has none ("nightly")."""
    match = _VERSION.match(str(version))
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def same_version(a: str, b: str, depth: str) -> bool:
    """Whether two versions agree to `depth` ("major", "minor", "patch"; "ignore" always agrees).

    A version given less precisely matches every version it is a prefix of ("3.6" matches
    "3.6.0" and "3.6.2" at any depth); versions without a number compare as strings.
    """
    if depth not in DEPTHS:
        raise ValueError(f"unknown version depth {depth!r}; valid depths: {', '.join(DEPTHS)}")
    if depth == "ignore":
        return True
    pa, pb = version_parts(a), version_parts(b)
    if pa is None or pb is None:
        return str(a).strip() == str(b).strip()
    k = DEPTHS.index(depth)
    shared = min(k, len(pa), len(pb))
    return pa[:shared] == pb[:shared]


@dataclass(frozen=True)
class ToolchainPolicy:
    """Which components matter for each backend, to which depth, and what superseded evidence
    still weighs."""

    components: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: {b: dict(c) for b, c in DEFAULT_COMPONENTS.items()}
    )
    superseded_weight: float = DEFAULT_SUPERSEDED_WEIGHT

    def __post_init__(self) -> None:
        if not 0.0 <= self.superseded_weight <= 1.0:
            raise ValueError(f"superseded_weight must be in [0, 1], got {self.superseded_weight}")
        for backend, components in self.components.items():
            for component, depth in components.items():
                if depth not in DEPTHS:
                    raise ValueError(
                        f"toolchain setting {backend}.{component}: unknown depth {depth!r}; "
                        f"valid depths: {', '.join(DEPTHS)}"
                    )

    @classmethod
    def with_overrides(
        cls,
        overrides: Mapping[str, Mapping[str, str]] | None = None,
        superseded_weight: float = DEFAULT_SUPERSEDED_WEIGHT,
    ) -> ToolchainPolicy:
        """The defaults with per-backend component depths replaced or added
        ({"cuda": {"torch": "major"}} makes torch's major version matter on CUDA too)."""
        merged = {b: dict(c) for b, c in DEFAULT_COMPONENTS.items()}
        for backend, components in (overrides or {}).items():
            merged.setdefault(backend, {}).update(components)
        return cls(components=merged, superseded_weight=superseded_weight)

    def depths(self, backend: str | None) -> dict[str, str]:
        """Components that matter on `backend` and their depth (ignored ones left out); for
        no backend, those of every backend at the strictest depth any gives them."""
        if backend is not None:
            return {c: d for c, d in self.components.get(backend, {}).items() if d != "ignore"}
        merged: dict[str, str] = {}
        for components in self.components.values():
            for c, d in components.items():
                if DEPTHS.index(d) > DEPTHS.index(merged.get(c, "ignore")):
                    merged[c] = d
        return merged


@dataclass(frozen=True)
class VersionChange:
    """A component whose version differs between the evidence and the current toolchain."""

    component: str
    evidence: str
    current: str


@dataclass(frozen=True)
class EvidenceStatus:
    status: Status
    changed: tuple[VersionChange, ...] = ()


def compare(
    evidence: Mapping[str, str],
    current: Mapping[str, str],
    backend: str | None,
    policy: ToolchainPolicy,
) -> EvidenceStatus:
    """Status of evidence gathered under `evidence` versions for a context running `current`."""
    compared, changed = 0, []
    for component, depth in sorted(policy.depths(backend).items()):
        if component not in evidence or component not in current:
            continue
        compared += 1
        old, new = str(evidence[component]), str(current[component])
        if not same_version(old, new, depth):
            changed.append(VersionChange(component, old, new))
    if changed:
        return EvidenceStatus("superseded", tuple(changed))
    return EvidenceStatus("current" if compared else "unknown")


@dataclass(frozen=True)
class ToolchainEvidence:
    """Evidence gathered under one set of versions: `n` outcomes, or (`source`) the run the
    lesson was distilled from, which has no outcomes but dates the lesson."""

    versions: Mapping[str, str]
    n: int = 0
    source: bool = False


def scope_weights(
    evidence_by_scope: Mapping[str, Sequence[ToolchainEvidence]],
    current: Mapping[str, str],
    backend: str | None,
    policy: ToolchainPolicy,
) -> dict[str, float]:
    """The weight of each scope's observations: (current + unknown + w * superseded) / all.

    Scopes without outcomes, or whose outcomes are all current or unknown, are left out (their
    weight is 1). An empty `current` discounts nothing.
    """
    if not current:
        return {}
    weights = {}
    for scope, pieces in evidence_by_scope.items():
        total = sum(p.n for p in pieces if not p.source)
        if total <= 0:
            continue
        superseded = sum(
            p.n
            for p in pieces
            if not p.source and compare(p.versions, current, backend, policy).status == "superseded"
        )
        if superseded:
            weights[scope] = (total - superseded + policy.superseded_weight * superseded) / total
    return weights


@dataclass(frozen=True)
class EvidenceView:
    """One piece of evidence as a response shows it."""

    versions: dict[str, str]
    n: int
    source: bool
    status: Status
    changed: tuple[VersionChange, ...]


@dataclass(frozen=True)
class Staleness:
    """Whether a lesson's evidence is all superseded, with the versions behind it."""

    stale: bool
    evidence: tuple[EvidenceView, ...]


def staleness(
    evidence: Sequence[ToolchainEvidence],
    current: Mapping[str, str],
    backend: str | None,
    policy: ToolchainPolicy,
) -> Staleness:
    """A lesson is stale when some of its evidence is superseded and none is current."""
    views = []
    for piece in evidence:
        status = compare(piece.versions, current, backend, policy) if current else None
        views.append(
            EvidenceView(
                versions=dict(piece.versions),
                n=piece.n,
                source=piece.source,
                status=status.status if status else "unknown",
                changed=status.changed if status else (),
            )
        )
    statuses = {v.status for v in views}
    return Staleness("superseded" in statuses and "current" not in statuses, tuple(views))


def newest_versions(seen: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The newest version of each component among recorded toolchains (numeric order; a
    version without a number loses to any with one): the default "current" toolchain."""
    newest: dict[str, str] = {}
    for versions in seen:
        for component, version in versions.items():
            best = newest.get(component)
            if best is None or _order(str(version)) > _order(best):
                newest[component] = str(version)
    return newest


def _order(version: str) -> tuple[int, tuple[int, ...], str]:
    parts = version_parts(version)
    return (1, parts, version) if parts is not None else (0, (), version)


def parse_toolchain(pairs: Sequence[str]) -> dict[str, str]:
    """["triton=3.6", "torch=2.11.0"] -> {"triton": "3.6", "torch": "2.11.0"}.

    Raises:
        ValueError: a pair without "=", or with an empty component or version.
    """
    parsed = {}
    for pair in pairs:
        component, sep, version = pair.partition("=")
        if not sep or not component.strip() or not version.strip():
            raise ValueError(f"bad toolchain {pair!r}; expected component=version (triton=3.6)")
        parsed[component.strip().lower()] = version.strip()
    return parsed
