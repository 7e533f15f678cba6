"""A pooled performance model across keys and chips: one key's timings inform the next.

Pure. The family model (`search.model.family`) keeps one column per stored (chip, problem):
it can say nothing of a problem size or a chip that no stored run measured except through the
columns' similarity. The pooled model is one gradient-boosted model over every stored
measurement of the family, partial runs included (only what was timed), whose features are the
configuration's encoded parameters and:

- the key's values: each problem size (log2; Kernel Tuner's `problem_size` list as x, y, z;
  named sizes such as Triton's M, N, K as m, n, k) and the dtype's width in bytes;
- the chip's descriptors (`platforms`): compute units, warp width, memory bandwidth, fp32
  peak (log2; 0 for an unknown chip);
- quantities derived from both: how many blocks (work-groups, programs) the configuration
  makes of the problem, against the chip's compute units (log2 of blocks, of waves, and the
  tail wave's occupancy), the loop steps along a reduction size (k), and the threads per block.

A parameter tiles a size when its lower-cased name ends in that size's letter (`block_size_x`,
`tile_size_y`, `BLOCK_M`) and names a block or a tile; the work of one block along a size is
the product of the parameters that tile it. The target is ln(latency) less the stored group's
median, as in the family model's columns, so chips and sizes of different speed are comparable
and the search's calibration supplies the scale.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tunemem.search.model.encoding import ConfigKey, FloatArray, ParamEncoding

GRID_SIZES = ("x", "y", "z", "m", "n")
LOOP_SIZES = ("k",)
SIZES = GRID_SIZES + LOOP_SIZES
DTYPE_BYTES = {"8": 1.0, "16": 2.0, "32": 4.0, "64": 8.0}
MAX_ROWS = 30_000  # rows the pooled model trains on (a seeded sample beyond)
TREES = 150
LEAVES = 31


@dataclass(frozen=True)
class KeyContext:
    """What the pooled model knows of a key: its sizes, dtype width and chip descriptors."""

    sizes: Mapping[str, float]
    dtype_bytes: float
    chip: tuple[float, float, float, float]  # log2 compute units, warp, bandwidth, fp32 peak

    @staticmethod
    def of(signature: Mapping[str, Any] | None, chip: str | None) -> KeyContext:
        return KeyContext(_sizes(signature or {}), _dtype_bytes(signature or {}), _chip(chip))

    @property
    def compute_units(self) -> float:
        return float(round(2.0 ** self.chip[0])) if self.chip[0] > 0 else 0.0


def _sizes(signature: Mapping[str, Any]) -> dict[str, float]:
    sizes: dict[str, float] = {}
    problem = signature.get("problem_size")
    if isinstance(problem, int | float) and not isinstance(problem, bool):
        problem = [problem]
    if isinstance(problem, list | tuple):
        for letter, value in zip("xyz", problem, strict=False):
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                sizes[letter] = float(value)
    for name, value in signature.items():
        letter = str(name).lower()
        if letter in SIZES and isinstance(value, int | float) and not isinstance(value, bool):
            if value > 0:
                sizes[letter] = float(value)
    return sizes


def _dtype_bytes(signature: Mapping[str, Any]) -> float:
    dtype = signature.get("dtype")
    if not isinstance(dtype, str):
        return 0.0
    bits = re.findall(r"(8|16|32|64)", dtype)
    return DTYPE_BYTES[bits[-1]] if bits else 0.0


def _chip(chip: str | None) -> tuple[float, float, float, float]:
    if not chip:
        return (0.0, 0.0, 0.0, 0.0)
    from tunemem import platforms

    try:
        known = platforms.resolve(chip)
    except (platforms.UnknownChipError, ValueError):
        return (0.0, 0.0, 0.0, 0.0)

    def log2(value: float | None) -> float:
        return math.log2(value) if value and value > 0 else 0.0

    return (
        log2(known.compute_units),
        log2(known.warp_size),
        log2(known.mem_bandwidth_gbs),
        log2(known.peak_fp32_tflops),
    )


def tiling(params: Sequence[str]) -> dict[str, list[int]]:
    """Per size letter, the positions of the parameters that tile it (module docstring)."""
    out: dict[str, list[int]] = {}
    for i, name in enumerate(params):
        lower = name.lower()
        if "block" not in lower and "tile" not in lower:
            continue
        for letter in SIZES:
            if lower.endswith(f"_{letter}") or lower.endswith(f"size{letter}"):
                out.setdefault(letter, []).append(i)
    return out


def derived(params: Sequence[str], keys: Sequence[ConfigKey], key: KeyContext) -> FloatArray:
    """The derived quantities of configurations for one key (rows: keys; 6 columns)."""
    tiles = tiling(params)
    threads_of = [
        i
        for i, name in enumerate(params)
        if "block_size" in name.lower() and any(i in v for v in tiles.values())
    ]
    units = key.compute_units
    out = np.zeros((len(keys), 6), dtype=np.float64)
    for r, config in enumerate(keys):

        def work(letter: str, config: ConfigKey = config) -> float:
            value = 1.0
            for i in tiles.get(letter, []):
                v = config[i]
                if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
                    value *= float(v)
            return value

        blocks = 1.0
        for letter in GRID_SIZES:
            if letter in key.sizes and letter in tiles:
                blocks *= math.ceil(key.sizes[letter] / work(letter))
        steps = 1.0
        for letter in LOOP_SIZES:
            if letter in key.sizes and letter in tiles:
                steps *= math.ceil(key.sizes[letter] / work(letter))
        threads = 1.0
        for i in threads_of:
            v = config[i]
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
                threads *= float(v)
        waves = blocks / units if units else 0.0
        tail = blocks / (units * math.ceil(waves)) if units and waves else 0.0
        out[r] = (
            math.log2(blocks),
            math.log2(waves) if waves else 0.0,
            tail,
            math.log2(steps),
            math.log2(threads),
            1.0 if tiles else 0.0,
        )
    return out


def _key_row(key: KeyContext) -> list[float]:
    sizes = [math.log2(key.sizes[s]) if s in key.sizes else 0.0 for s in SIZES]
    return [*sizes, key.dtype_bytes, *key.chip]


@dataclass
class PooledModel:
    """The pooled model of one family (module docstring)."""

    params: tuple[str, ...]
    encodings: tuple[ParamEncoding, ...]
    learner: Any
    groups: int
    rows: int

    def features(self, keys: Sequence[ConfigKey], key: KeyContext) -> FloatArray:
        encoded = np.asarray(
            [[enc.encode(v) for enc, v in zip(self.encodings, k, strict=True)] for k in keys],
            dtype=np.float64,
        ).reshape(len(keys), len(self.encodings))
        context = np.tile(np.asarray(_key_row(key), dtype=np.float64), (len(keys), 1))
        return np.hstack([encoded, context, derived(self.params, keys, key)])

    def predict(self, keys: Sequence[ConfigKey], key: KeyContext) -> FloatArray:
        """Normalised ln latency of configurations at a key (the stored groups' scale)."""
        if not keys:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(self.learner.predict(self.features(keys, key)), dtype=np.float64)


@dataclass(frozen=True)
class KeyedSpace:
    """One stored group's measurements with the key they were measured at."""

    key: KeyContext
    measurements: Mapping[ConfigKey, float | None]


def build_pooled(
    params: Sequence[str],
    encodings: Sequence[ParamEncoding],
    spaces: Sequence[KeyedSpace],
    seed: int = 0,
) -> PooledModel | None:
    """Train the pooled model on every feasible stored measurement; None without any."""
    blocks_x, blocks_y = [], []
    model = PooledModel(tuple(params), tuple(encodings), None, 0, 0)
    for space in spaces:
        ok = [(k, math.log(ms)) for k, ms in space.measurements.items() if ms and ms > 0]
        if len(ok) < 2:
            continue
        logs = np.array([y for _, y in ok])
        blocks_x.append(model.features([k for k, _ in ok], space.key))
        blocks_y.append(logs - float(np.median(logs)))
    if not blocks_x:
        return None
    x, y = np.vstack(blocks_x), np.concatenate(blocks_y)
    if len(y) > MAX_ROWS:
        pick = np.random.default_rng(seed).choice(len(y), size=MAX_ROWS, replace=False)
        x, y = x[pick], y[pick]
    import lightgbm

    learner = lightgbm.LGBMRegressor(
        n_estimators=TREES,
        num_leaves=LEAVES,
        learning_rate=0.1,
        min_child_samples=5,
        n_jobs=1,
        random_state=seed,
        deterministic=True,
        force_row_wise=True,
        verbose=-1,
    )
    learner.fit(x, y)
    model.learner, model.groups, model.rows = learner, len(blocks_x), len(y)
    return model
