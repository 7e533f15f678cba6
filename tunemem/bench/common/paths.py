"""Where the benchmarks find their data and write their results: one place for every default.

The benchmarks run from a clone: results go to the clone's `bench/results/`, and the measured
data sets (Kernel Tuner caches, vLLM's tuned files) are read from a `shared/data/` folder beside
the clone unless a command is given another path.
"""

from __future__ import annotations

from pathlib import Path

# tunemem/bench/common/paths.py -> the clone's root is three folders above `common`.
REPO_ROOT = Path(__file__).resolve().parents[3]
RESULTS = REPO_ROOT / "bench" / "results"
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
KERNELTUNER_CACHES = SHARED_DATA / "kerneltuner"
VLLM_FUSED_MOE = SHARED_DATA / "vllm_fused_moe"
