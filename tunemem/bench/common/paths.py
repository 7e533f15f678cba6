"""Where the benchmarks find their data and write their results: one place for every default.

The benchmarks run from a clone: results go to the clone's `bench/results/`, one folder per
command that writes them (`RESULTS_OF`), and the measured data sets (Kernel Tuner caches, vLLM's
tuned files) are read from a `shared/data/` folder beside the clone unless a command is given
another path.
"""

from __future__ import annotations

from pathlib import Path

# tunemem/bench/common/paths.py -> the clone's root is three folders above `common`.
REPO_ROOT = Path(__file__).resolve().parents[3]
RESULTS = REPO_ROOT / "bench" / "results"
# One folder per command that writes results: the `tunemem bench` commands, `helion`, `capture`
# and `sglang` for their studies on a GPU, `studies` for `python -m tunemem.bench.studies.*`.
RESULT_FOLDERS = (
    "ingest",
    "service",
    "learning",
    "tuners",
    "kernels",
    "live",
    "autotune",
    "moe",
    "helion",
    "capture",
    "sglang",
    "studies",
)
RESULTS_OF = {command: RESULTS / command for command in RESULT_FOLDERS}
# The recorded H200 sweeps and the trajectories the GPU benchmarks add to them (replay data).
SWEEPS = RESULTS / "h200"
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
KERNELTUNER_CACHES = SHARED_DATA / "kerneltuner"
VLLM_FUSED_MOE = SHARED_DATA / "vllm_fused_moe"
