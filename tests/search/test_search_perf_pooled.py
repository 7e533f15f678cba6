"""The pooled performance model and the search's exploration, on SYNTHETIC kernels.

A SYNTHETIC tiled kernel (invented times): a configuration's time is its waves of blocks over
the chip's compute units times the time of one block, so its best tile moves with the problem
size. The memory holds partial runs (20 of 75 configurations) at five keys; the run's key is
none of them.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from tunemem.search.model.family import ChipSpace, build_family_model
from tunemem.search.model.pooled import KeyContext, derived, tiling
from tunemem.search.model_search import fit_posterior

PARAMS = ("BLOCK_M", "BLOCK_N", "num_warps")
VALUES = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [16, 32, 64, 128, 256],
    "num_warps": [2, 4, 8],
}
CONFIGS = list(itertools.product(*VALUES.values()))
UNITS = 132  # the H200's compute units, as platforms describes it
STORED_KEYS = [(64, 4096), (128, 4096), (256, 8192), (512, 4096), (1024, 8192)]


def synthetic_ms(config: tuple, m: int, n: int) -> float:
    """SYNTHETIC: waves of blocks times one block's time (its tile's area, a warp mismatch)."""
    bm, bn, warps = config
    waves = math.ceil(math.ceil(m / bm) * math.ceil(n / bn) / UNITS)
    fit = abs(math.log2(warps) - math.log2(max(2, min(8, bm * bn / 1024))))
    return waves * ((bm * bn) / 4096 * (1 + 0.2 * fit) + 0.3)


def signature(m: int, n: int) -> dict:
    return {"M": m, "N": n, "K": 4096, "dtype": "float16"}


@pytest.fixture(scope="module")
def model():
    rng = random.Random(0)
    spaces = []
    for m, n in STORED_KEYS:
        sample = rng.sample(CONFIGS, 20)  # a partial run: only what it timed
        spaces.append(
            ChipSpace(
                f"h200@{m}x{n}",
                {c: synthetic_ms(c, m, n) for c in sample},
                KeyContext.of(signature(m, n), "h200"),
            )
        )
    built = build_family_model(PARAMS, spaces)
    assert built is not None and built.pooled is not None
    return built


def test_key_values_from_kernel_tuner_and_triton_signatures():
    kt = KeyContext.of({"problem_size": [4096, 2048], "tune_params_keys": ["x"]}, "a100")
    assert kt.sizes == {"x": 4096.0, "y": 2048.0} and kt.dtype_bytes == 0.0
    assert kt.compute_units == 108  # the A100's SMs
    triton = KeyContext.of(signature(64, 4096), "h200")
    assert triton.sizes == {"m": 64.0, "n": 4096.0, "k": 4096.0} and triton.dtype_bytes == 2.0
    unknown = KeyContext.of(None, "unknown:empty")
    assert unknown.sizes == {} and unknown.compute_units == 0.0


def test_derived_quantities_by_hand():
    params = ("block_size_x", "block_size_y", "tile_size_x", "use_padding")
    assert tiling(params) == {"x": [0, 2], "y": [1]}
    key = KeyContext.of({"problem_size": [4096, 4096]}, "a100")  # 108 compute units
    (row,) = derived(params, [(32, 8, 4, 1)], key)
    blocks = (4096 / (32 * 4)) * (4096 / 8)  # 32 x 512 = 16384
    assert row[0] == pytest.approx(math.log2(blocks))
    assert row[1] == pytest.approx(math.log2(blocks / 108))
    assert row[2] == pytest.approx(blocks / (108 * math.ceil(blocks / 108)))
    assert row[3] == 0.0  # no reduction size
    assert row[4] == pytest.approx(math.log2(32 * 8))  # threads per block


@pytest.mark.parametrize("key", [(4096, 4096), (8192, 8192)])
def test_the_pooled_model_finds_where_the_best_tile_moved_at_a_new_key(model, key):
    m, n = key
    best = min(synthetic_ms(c, m, n) for c in CONFIGS)
    target = KeyContext.of(signature(m, n), "h200")

    def first_picks(target: KeyContext | None) -> float:
        picks = fit_posterior(model, [], {}, valid=CONFIGS, target=target).suggest(3)
        return max(best / synthetic_ms(s.key, m, n) for s in picks)

    # The stored keys' columns alone propose what was good at small M (under 0.95 of the
    # best); with the key's values and the blocks a tile makes of them, the best is among
    # the first three.
    assert first_picks(None) < 0.95
    assert first_picks(target) >= 0.98


def test_an_unsure_memory_explores_and_says_so(model):
    m, n = 4096, 4096
    observations = [(c, synthetic_ms(c, m, n)) for c in CONFIGS[:6]]
    posterior = fit_posterior(model, observations, {}, valid=CONFIGS)
    picks = posterior.suggest(6)
    # Twenty of 75 configurations per stored key: a low coverage, so a low confidence.
    assert posterior.confidence < 0.6
    assert {s.purpose for s in picks} == {"exploit", "explore"}
    assert all(s.confidence == round(posterior.confidence, 3) for s in picks)
    explore = [s.key for s in picks if s.purpose == "explore"]
    assert len(explore) == posterior.explore_count(6) >= 1
    assert len({s.key for s in picks}) == 6 and not {s.key for s in picks} & set(CONFIGS[:6])


def test_a_sure_memory_does_not_explore():
    # Every configuration measured on the stored chip, and the run's outcomes rank as it does.
    spaces = [ChipSpace("h200", {c: synthetic_ms(c, 4096, 4096) for c in CONFIGS})]
    built = build_family_model(PARAMS, spaces)
    assert built is not None
    observations = [(c, 2.0 * synthetic_ms(c, 4096, 4096)) for c in CONFIGS[::9]]
    posterior = fit_posterior(built, observations, {}, valid=CONFIGS)
    assert posterior.confidence > 0.9
    assert posterior.explore_count(5) == 0
    assert {s.purpose for s in posterior.suggest(5)} == {"exploit"}
