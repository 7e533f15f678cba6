"""`tunemem bench moe`: `tunemem tune moe` replayed on a recorded H200 landscape, against the
full search's stand-in, "copy the nearest GPU's shipped file" and vLLM's default.

Each run of the tool gets a fresh memory: a service behind HTTP holding vLLM's shipped files
(`--shipped`, no H200 file among them) and nothing measured on the H200; the tool reaches it
over HTTP as a user's would, and what it reports feeds its own later rounds only. Its timing
function looks each configuration up in the landscape recorded on the H200 by
`kernels.moe_sweep` (`--landscape`), and its space is restricted to the recorded
configurations (the seeded 384-sample of vLLM's 1,920, the nearby shipped ones and vLLM's
defaults), so every configuration it can ask for has a time. The same tool also runs without a
memory (its documented fallback). Writes replay.json / replay.md, the tool's trajectories and
the vLLM files it produced under `--out`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunemem.bench.common.options import Listed, prog
from tunemem.bench.common.paths import RESULTS, VLLM_FUSED_MOE
from tunemem.bench.moe.landscape import (
    COMPILE_CORE_S,
    Case,
    copy_arm,
    default_arm,
    load_case,
    nearest_file,
    sample_arm,
)
from tunemem.bench.moe.report import markdown, summarise
from tunemem.kernels.moe_plan import CASES

DEFAULT_LANDSCAPE = RESULTS / "moe" / "h200-landscape"
DEFAULT_SHIPPED = VLLM_FUSED_MOE
DEFAULT_OUT = RESULTS / "moe"
DEVICE = "NVIDIA H200"
# The benchmark's memory waits for its model builds (model_wait_s), so the tool waits longer
# than its 10 s default rather than go on without the memory after one slow build.
TOOL_TIMEOUT_S = 120.0


def replay_benchmark(case: Case):
    """A timing function with vLLM's benchmark_config signature over the recorded times."""

    def benchmark(config: dict[str, int], num_tokens: int, *_args: Any, **_kw: Any) -> float:
        us = case.us(num_tokens, config)  # KeyError: not recorded (the space forbids that)
        if us is None:
            raise RuntimeError("failed on the H200 (recorded)")
        return us

    return benchmark


class Memories:
    """A fresh memory per tool run: a service behind HTTP holding the shipped files only, so
    no run sees another's H200 measurements."""

    def __init__(self, shipped: Path) -> None:
        from tunemem.memory_service.core.embedding.factory import create_embedder

        self.shipped = shipped
        self.embedder = create_embedder("minilm")
        self.ingest_summary: Any = None

    @contextlib.contextmanager
    def fresh(self) -> Iterator[str]:
        from tunemem.bench.common.arms import LIVE_SERVICE_SETTINGS
        from tunemem.bench.common.memory_server import LiveService
        from tunemem.ingest.readers import read_any

        live = LiveService(LIVE_SERVICE_SETTINGS, embedder=self.embedder)
        try:
            self.ingest_summary = live.service.ingest(read_any([self.shipped]))
            yield live.url
        finally:
            live.close()


def tool_arm(case: Case, memories: Memories | None, budget: int, seed: int) -> dict[str, Any]:
    if memories is None:
        return _tool_arm(case, None, budget, seed)
    with memories.fresh() as url:
        return _tool_arm(case, url, budget, seed)


def _tool_arm(case: Case, url: str | None, budget: int, seed: int) -> dict[str, Any]:
    from tunemem.agent_client.tuners.moe.tune import MoeShape, tune_moe

    shape = MoeShape(case.experts, case.n, case.hidden, case.top_k, case.dtype)
    space = list(case.configs.values())
    started = time.perf_counter()
    result = tune_moe(
        shape,
        case.batch_sizes,
        replay_benchmark(case),
        memory_url=url,
        device_name=DEVICE,
        budget=budget,
        space=space,
        seed=seed,
        timeout_s=TOOL_TIMEOUT_S,
    )
    wall = time.perf_counter() - started
    per_m = {}
    for m in case.batch_sizes:
        rows = result.timed[m]
        best = result.best(m)
        per_m[m] = {
            "us": best["us"] if best else None,
            "config": best["config"] if best else None,
            "timed": len(rows),
            "gpu_s": sum(case.timing_s(m, r["config"]) for r in rows),
            "found_by": best["origin"] if best else None,
            "found_in_round": best["round"] if best else None,
        }
    distinct = {
        json.dumps(r["config"], sort_keys=True) for rows in result.timed.values() for r in rows
    }
    return {
        "per_m": per_m,
        "result": result,
        "wall_s": wall,
        "distinct": len(distinct),
        "memory_used": result.memory_used,
        "warnings": result.warnings,
    }


def budget_sweep(
    case: Case, memories: Memories, budgets: list[int], seed: int
) -> list[dict[str, Any]]:
    """The tool with and without the memory at smaller budgets: mean speed, share >= 0.98."""
    out = []
    for budget in budgets:
        for label, memory in (("memory", memories), ("no memory", None)):
            per_m = tool_arm(case, memory, budget, seed)["per_m"]
            speeds = [
                case.best(m)[0] / per_m[m]["us"] if per_m[m]["us"] else 0.0
                for m in case.batch_sizes
            ]
            out.append(
                {
                    "budget": budget,
                    "arm": label,
                    "speeds": speeds,
                    "mean_speed": sum(speeds) / len(speeds),
                    "share_at_0.98": sum(s >= 0.98 for s in speeds) / len(speeds),
                }
            )
    return out


def run_case(case: Case, memories: Memories, budget: int, seed: int) -> dict[str, Any]:
    shipped = nearest_file(case, memories.shipped)
    with_memory = tool_arm(case, memories, budget, seed)
    without = tool_arm(case, None, budget, seed)
    rows = []
    for m in case.batch_sizes:
        ref_us, ref_config = case.best(m)
        rows.append(
            {
                "m": m,
                "reference_us": ref_us,
                "reference_config": ref_config,
                "tool": with_memory["per_m"][m],
                "tool_no_memory": without["per_m"][m],
                "sample384": sample_arm(case, m),
                "copy_nearest": copy_arm(case, m, shipped),
                "vllm_default": default_arm(case, m),
            }
        )
    return {
        "case": case.name,
        "model": case.model,
        "E": case.experts,
        "N": case.n,
        "hidden": case.hidden,
        "topk": case.top_k,
        "dtype": case.dtype,
        "recorded_configs": len(case.configs),
        "nearest_file": shipped["name"],
        "rows": rows,
        "tool_distinct_configs": with_memory["distinct"],
        "tool_no_memory_distinct_configs": without["distinct"],
        "tool_wall_s": with_memory["wall_s"],
        "tool_warnings": with_memory["warnings"],
        "tool_memory_used": with_memory["memory_used"],
        "_results": (with_memory["result"], without["result"]),
    }


def write_artifacts(out: Path, case_result: dict[str, Any]) -> None:
    tool, no_memory = case_result.pop("_results")
    (out / "configs").mkdir(parents=True, exist_ok=True)
    tool.write(out / "configs")
    (out / "trajectories").mkdir(parents=True, exist_ok=True)
    for label, result in (("tool", tool), ("tool-no-memory", no_memory)):
        body = {
            str(m): [{k: r[k] for k in ("config", "us", "error", "origin", "round")} for r in rows]
            for m, rows in result.timed.items()
        }
        path = out / "trajectories" / f"{case_result['case']}-{label}.json"
        path.write_text(json.dumps(body, indent=1) + "\n")


def parser(name: str = prog("moe", None)) -> argparse.ArgumentParser:
    """The options of `tunemem bench moe` and `python -m tunemem.bench.moe`."""
    p = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    p.add_argument(
        "--landscape", type=Path, default=DEFAULT_LANDSCAPE, help="recorded H200 timings"
    )
    p.add_argument(
        "--shipped", type=Path, default=DEFAULT_SHIPPED, help="vLLM's shipped files: the memory"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    p.add_argument("--budget", type=int, default=32, help="timed configurations per batch size")
    p.add_argument(
        "--sweep-budgets",
        type=int,
        nargs="*",
        default=[8],
        help="smaller budgets to run the tool at as well",
    )
    p.add_argument("--seed", type=int, default=0, help="the tool's seed")
    p.add_argument(
        "--cases",
        action=Listed,
        default=[c[0] for c in CASES],
        help="cases, comma- or space-separated (default all)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    options = parser(prog("moe", argv))
    args = options.parse_args(argv)
    if not args.shipped.is_dir():
        options.error(f"no folder of vLLM's shipped files at {args.shipped}")
    known = {c[0] for c in CASES}
    if unknown := [c for c in args.cases if c not in known]:
        options.error(f"unknown cases {unknown}; known: {sorted(known)}")
    try:
        cases = [load_case(args.landscape, name) for name in args.cases]
    except (FileNotFoundError, ValueError) as exc:
        options.error(str(exc))

    from tunemem.bench.common.results import memory_held, provenance, started_on, write_result

    started_on()  # the code version is the one this run starts on

    memories = Memories(args.shipped)
    results = []
    for case in cases:
        result = run_case(case, memories, args.budget, args.seed)
        result["budget_sweep"] = budget_sweep(case, memories, args.sweep_budgets, args.seed)
        write_artifacts(args.out, result)
        results.append(result)
        # written after every case, so a run stopped early keeps the cases it finished
        report = {
            **provenance(
                "tunemem bench moe " + " ".join(argv if argv is not None else sys.argv[1:]),
                seeds=[args.seed],
                kind="replayed",
            ),
            "memory_held": memory_held(
                "shipped",
                f"vLLM's shipped files ({args.shipped.name}, no H200 file among them); what "
                "the tool reports feeds only its own later rounds",
            ),
            "memory": {
                "shipped_folder": str(args.shipped.name),
                "ingest": _jsonable(memories.ingest_summary),
                "h200_measurements": 0,
            },
            "budget": args.budget,
            "sweep_budgets": args.sweep_budgets,
            "seed": args.seed,
            "compile_core_s_per_config": COMPILE_CORE_S,
            "cases": results,
            "summary": summarise(results),
        }
        write_result(args.out, "replay", report, markdown(report))
    return 0


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return value
