"""Which fused-MoE configurations to record on a GPU for a case, so the tuning can be replayed.

A case is one layer shape (E, N, hidden size, top-k, dtype) and its batch sizes. Its plan
holds a seeded random sample of vLLM's space (the stand-in for the full search), every
configuration that vLLM's shipped files of nearby shapes hold for any GPU (what a memory of
those files can propose, and what "copy the nearest GPU's file" uses), and vLLM's default
configurations. `python -m tunemem.kernels.moe_plan OUT.json` writes the plan of the benchmark's
cases.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tunemem.kernels.moe_space import (
    config_key,
    default_config,
    kernel_accepts,
    normalise,
    sample_space,
    shape_distance,
)

# Shipped files at most this far (octaves in E plus octaves in N) are "nearby".
NEARBY_OCTAVES = 1.0
SAMPLE_SIZE = 384
SAMPLE_SEED = 0
BATCH_SIZES = [1, 8, 16, 32, 64, 256, 1024, 4096]
# (name, E, N, hidden size, top-k, dtype, model): real models' MoE layers.
CASES: list[tuple[str, int, int, int, int, str, str]] = [
    ("mixtral-8x7b-tp2-bf16", 8, 7168, 4096, 2, "bfloat16", "Mixtral-8x7B, tensor parallel 2"),
    ("qwen3-30b-a3b-tp1-bf16", 128, 768, 2048, 8, "bfloat16", "Qwen3-30B-A3B, one GPU"),
    ("mixtral-8x7b-tp1-fp8", 8, 14336, 4096, 2, "fp8_w8a8", "Mixtral-8x7B fp8, one GPU"),
    # Held out: recorded after the tuner's method was fixed on the three cases above.
    ("mixtral-8x22b-tp4-bf16", 8, 4096, 6144, 2, "bfloat16", "Mixtral-8x22B, tensor parallel 4"),
    ("qwen3-30b-a3b-tp2-bf16", 128, 384, 2048, 8, "bfloat16", "Qwen3-30B-A3B, tensor parallel 2"),
]
HELD_OUT = ("mixtral-8x22b-tp4-bf16", "qwen3-30b-a3b-tp2-bf16")


def shipped_files(folder: Path) -> list[dict[str, Any]]:
    """vLLM's tuned files in a folder: E, N, device, dtype and the per-batch-size configs."""
    from tunemem.ingest.readers.vllm_moe import NAME_PATTERN  # here: the GPU side needs no ingest

    files = []
    for path in sorted(folder.glob("*.json")):
        match = NAME_PATTERN.match(path.name)
        if not match:
            continue
        rest = match["rest"]
        dtype = "fp8_w8a8" if "dtype=fp8_w8a8" in rest else None
        if dtype is None and "dtype=" in rest:
            dtype = rest.split("dtype=")[1].split(",")[0]
        entries = {}
        for key, config in json.loads(path.read_text()).items():
            if key.isdecimal() and isinstance(config, dict):
                try:
                    entries[int(key)] = normalise(config)
                except (KeyError, ValueError, TypeError):
                    continue
        files.append(
            {
                "name": path.name,
                "E": int(match["E"]),
                "N": int(match["N"]),
                "device": match["device"],
                "dtype": dtype or "bfloat16",
                "block_shape": "block_shape=" in rest,
                "entries": entries,
            }
        )
    return files


def case_configs(
    experts: int, n: int, dtype: str, files: list[dict[str, Any]]
) -> list[dict[str, int]]:
    """The sample, the nearby shipped configurations and the defaults, deduplicated."""
    chosen: dict[tuple[int, ...], dict[str, int]] = {}
    for config in sample_space(SAMPLE_SIZE, SAMPLE_SEED):
        chosen[config_key(config)] = config
    for shipped in files:
        if shape_distance(experts, n, shipped["E"], shipped["N"]) > NEARBY_OCTAVES:
            continue
        for config in shipped["entries"].values():
            if kernel_accepts(config):
                chosen.setdefault(config_key(config), config)
    for m in BATCH_SIZES:
        config = default_config(m, experts, dtype)
        chosen.setdefault(config_key(config), config)
    return list(chosen.values())


def build_plan(folder: Path) -> dict[str, Any]:
    files = shipped_files(folder)
    cases = []
    for name, experts, n, hidden, top_k, dtype, model in CASES:
        cases.append(
            {
                "name": name,
                "model": model,
                "E": experts,
                "N": n,
                "hidden": hidden,
                "topk": top_k,
                "dtype": dtype,
                "batch_sizes": BATCH_SIZES,
                "configs": case_configs(experts, n, dtype, files),
            }
        )
    return {"sample_size": SAMPLE_SIZE, "sample_seed": SAMPLE_SEED, "cases": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shipped", type=Path, default=Path("../shared/data/vllm_fused_moe"))
    args = parser.parse_args(argv)
    if not args.shipped.is_dir():
        parser.error(f"no folder of vLLM tuned files at {args.shipped}")
    plan = build_plan(args.shipped)
    args.out.write_text(json.dumps(plan))
    for case in plan["cases"]:
        print(f"{case['name']}: {len(case['configs'])} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
