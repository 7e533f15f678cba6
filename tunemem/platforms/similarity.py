"""Chip similarity: how alike two chips are, from their descriptors, in (0, 1].

similarity(a, b) = exp(-d), with d a weighted sum of differences, each term named in
`similarity_terms` so a caller can show where a similarity came from:

- `backend`: 1 when the backends differ (CUDA vs HIP: different compilers and vocabularies);
- `family`: 1 when the architecture families differ (Turing vs Ampere);
- `warp_size`: 1 when the warp/wavefront widths differ (32 vs 64 reshapes every block size);
- `compute_units`, `onchip_mem`, `bandwidth`, `fp32`: |ln(a / b)| of compute units, on-chip
  memory per unit, memory bandwidth and peak fp32 throughput (a factor of e counts as 1).

A figure missing on either side (null in the registry) contributes nothing: the similarity is
then decided by the remaining terms, never by a guessed number. A chip is 1.0 alike to itself;
an unknown chip (no descriptor) is alike to another only through its backend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tunemem.platforms.chips import Chip
from tunemem.platforms.resolve import resolve

# Weights of the terms of d. Categorical differences weigh most: a chip of another backend or
# family tunes differently even at equal size; size ratios weigh half per factor of e. The
# backend weighs 3: on the development data (convolution, dedispersion on A100, A4000, MI250X,
# W6600) a same-backend chip transferred best even when a CUDA chip was closer in size.
WEIGHTS: Mapping[str, float] = {
    "backend": 3.0,
    "family": 1.0,
    "warp_size": 0.5,
    "compute_units": 0.5,
    "onchip_mem": 0.5,
    "bandwidth": 0.5,
    "fp32": 0.25,
}


def _chip(chip: Chip | str) -> Chip:
    return chip if isinstance(chip, Chip) else resolve(chip)


def _log_ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return abs(math.log(a / b))


def similarity_terms(a: Chip | str, b: Chip | str) -> dict[str, float]:
    """The weighted terms of d between two chips (only the terms both descriptors allow)."""
    first, second = _chip(a), _chip(b)
    terms: dict[str, float] = {"backend": float(first.backend != second.backend)}
    if not (first.known and second.known):
        return {"backend": WEIGHTS["backend"] * terms["backend"]}
    terms["family"] = float(first.family != second.family)
    if first.warp_size and second.warp_size:
        terms["warp_size"] = float(first.warp_size != second.warp_size)
    for name, x, y in (
        ("compute_units", first.compute_units, second.compute_units),
        ("onchip_mem", first.onchip_mem_kb_per_unit, second.onchip_mem_kb_per_unit),
        ("bandwidth", first.mem_bandwidth_gbs, second.mem_bandwidth_gbs),
        ("fp32", first.peak_fp32_tflops, second.peak_fp32_tflops),
    ):
        ratio = _log_ratio(x, y)
        if ratio is not None:
            terms[name] = ratio
    return {name: WEIGHTS[name] * value for name, value in terms.items()}


def chip_similarity(a: Chip | str, b: Chip | str) -> float:
    """exp(-d) over the descriptor terms: 1.0 for the same chip, towards 0 for unlike ones.

    Args:
        a, b: chips, or device names / ids that `resolve` maps to chips.
    """
    first, second = _chip(a), _chip(b)
    if first.id == second.id:
        return 1.0
    return math.exp(-sum(similarity_terms(first, second).values()))
