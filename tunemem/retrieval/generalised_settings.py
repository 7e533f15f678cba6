"""The generalised value's weights, apart from the estimate itself, so that the knobs and the
ranking settings (read by every door, the CLI's API models among them) do not import the
estimate's numerics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeneralisedSettings:
    """Weights of the generalised value's terms, in pseudo-observations."""

    q0: float = 0.0
    kappa: float = 2.0  # weight of the neutral prior
    recorded_weight: float = 1.0  # one recorded reach on a chip exactly like the target
    outcome_weight: float = 1.0  # one reported outcome on a chip exactly like the target
    source_weight: float = 2.0  # the most a source prior can weigh
    affinity_kappa: float = 5.0  # common lessons at which agreement weighs as much as descriptors
    affinity_floor: float = 0.0  # the least weight any other chip's evidence gets
    claim_kappa: float = 2.0  # reproductions at which a space's record weighs as its prior trust
    claim_power: float = 0.0  # how sharply contradicted claims lose weight (0: not at all)
