"""On the GPU: `tune_moe` with its default timing function (this project's kernel) over vLLM's
whole 1,920-configuration space, the check that the replay's protocol runs as a user runs it.

The memory service does not run on the GPU machine (no web stack there), so the memory's part
is what it serves the tool first: the shipped files' per-batch-size choices, read from a JSON
dump of them (`--shipped-dump`, made here by `dump_shipped`); there is no performance model
and nothing is reported back. The tool also runs without a memory. Afterwards the chosen
configurations and the recorded landscape's best (`--landscape`) are timed again in the same
session, so the speed ratio is measured on one machine at one time.
`python -m tunemem.bench.moe.live_h200 --dump OUT.json` writes the dump (on any machine);
`python -m tunemem.bench.moe.live_h200 --shipped-dump D.json --landscape L.jsonl.gz --out DIR` runs
and writes live.json and live.md there through `write_result` (what the memory held, the code
version, the command, the GPU, measured, the tool's seed).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tunemem.kernels.moe_plan import CASES, shipped_files


def dump_shipped(folder: Path) -> list[dict[str, Any]]:
    """The shipped files as the memory lists them: one exemplar per file, choices by shape."""
    from tunemem.ingest.chip_context import chip_context

    lessons = []
    for f in shipped_files(folder):
        chip = chip_context(f["device"].replace("_", " ")).chip
        by_shape = [{"shapes": [{"M": m}], "config": c} for m, c in sorted(f["entries"].items())]
        signature = {
            "E": f["E"],
            "N": f["N"],
            "dtype": None if f["dtype"] == "bfloat16" else f["dtype"],
            "block_shape": [128, 128] if f["block_shape"] else None,
        }
        lessons.append(
            {
                "id": f["name"],
                "applicability": {"chips": [chip], "signature": signature},
                "hint": {"by_shape": by_shape},
            }
        )
    return lessons


class ShippedOnly:
    """A stand-in for the memory client that serves the dump and has no service behind it."""

    def __init__(self, lessons: list[dict[str, Any]]) -> None:
        self.lessons = lessons

    def list_lessons(self, **filters: Any) -> dict[str, Any]:
        page = self.lessons if not filters.get("offset") else []
        return {"data": page, "count": len(page)}

    def suggest(self, **_kw: Any) -> dict[str, Any]:
        raise RuntimeError("no memory service on the GPU machine (shipped files only)")

    def report(self, *_args: Any, **_kw: Any) -> None:
        """Nothing goes back: there is no memory on the GPU machine to learn from it."""

    def upload_trajectories(self, *_args: Any, **_kw: Any) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="write the shipped files' dump and stop")
    parser.add_argument("--shipped", type=Path, default=Path("../shared/data/vllm_fused_moe"))
    parser.add_argument("--shipped-dump", type=Path)
    parser.add_argument("--landscape", type=Path)
    parser.add_argument("--case", default=CASES[0][0])
    parser.add_argument("--batch-sizes", default="1,64,1024")
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("moe-live"))
    args = parser.parse_args(argv)
    if args.dump:
        from tunemem.agent_client.tuners.moe.memory import chip_similarities

        lessons = dump_shipped(args.shipped)
        chips = {lesson["applicability"]["chips"][0] for lesson in lessons}
        similarity = chip_similarities("NVIDIA H200", chips)
        args.dump.write_text(json.dumps({"lessons": lessons, "similarity": similarity}))
        return 0
    import warnings

    from tunemem.agent_client.tuners.moe.tune import MoeShape, tune_moe
    from tunemem.kernels.moe_recorded import load_landscape
    from tunemem.kernels.moe_timing import MoeProblem

    _, experts, n, hidden, top_k, dtype, _ = next(c for c in CASES if c[0] == args.case)
    sizes = [int(m) for m in args.batch_sizes.split(",")]
    shape = MoeShape(experts, n, hidden, top_k, dtype)
    import tunemem.agent_client.tuners.moe.tune as tuner

    dump = json.loads(args.shipped_dump.read_text())
    lessons = dump["lessons"]

    # The chip similarities were computed where `platforms` runs (its GPU database is not
    # installed on the GPU machine): the same numbers the tool computes itself.
    def similarities(target: str, chips: set[str]) -> dict[str, float]:
        return {c: dump["similarity"].get(c, 0.0) for c in chips}

    tuner.chip_similarities = similarities
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    clients: list[tuple[str, Any]] = [("shipped", ShippedOnly(lessons)), ("no-memory", None)]
    for label, client in clients:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = tune_moe(
                shape,
                sizes,
                memory_url="dump" if client else None,
                client=client,
                budget=args.budget,
                out=args.out / label,
            )
        runs[label] = result
        print(
            label,
            {m: (len(r), _best(result, m)["us"]) for m, r in result.timed.items()},
            flush=True,
        )
    recorded = load_landscape(args.landscape)
    problem = MoeProblem(experts, n, hidden, top_k, dtype)
    rows = []
    for m in sizes:
        timed = [(config, us) for config, us in recorded[m].values() if us is not None]
        ref_config, ref_us = min(timed, key=lambda v: v[1])
        row: dict[str, Any] = {
            "m": m,
            "recorded_best": ref_config,
            "recorded_best_us": ref_us,
            "recorded_best_now_us": problem.time_config(ref_config, m).us,
        }
        for label, result in runs.items():
            best = _best(result, m)
            row[label] = {
                "config": best["config"],
                "us_in_run": best["us"],
                "timed": len(result.timed[m]),
                "origin": best["origin"],
                "us_now": problem.time_config(best["config"], m).us,
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    import torch

    from tunemem.kernels.evidence import toolchain_versions

    by_arm = {label: {str(m): r for m, r in res.timed.items()} for label, res in runs.items()}
    command = shlex.join(
        ["python", "-m", "tunemem.bench.moe.live_h200", *(sys.argv[1:] if argv is None else argv)]
    )
    device = {"gpu": torch.cuda.get_device_name(), **toolchain_versions()}
    write_live(args.out, args.case, args.budget, rows, by_arm, command, device)
    return 0


SHIPPED_HELD = (
    "the shipped files' per-batch-size choices (no H200 file among them), with no "
    "performance model and nothing reported back"
)


def write_live(
    out: Path,
    case: str,
    budget: int,
    rows: list[dict[str, Any]],
    timed: dict[str, Any],
    command: str,
    device: dict[str, Any],
) -> dict[str, Any]:
    """Write live.json and live.md in `out` through `write_result`: the rows, each arm's
    timings, and how the run was made (`device`: the GPU and its toolchain)."""
    from tunemem.bench.common.results import memory_held, provenance, write_result

    result = {
        "benchmark": "moe-live",
        "memory_held": memory_held("shipped", SHIPPED_HELD),
        # the tool's seeded rounds: tune_moe's default seed
        **provenance(command, seeds=[0], kind="measured", device=device),
        "case": case,
        "budget": budget,
        "rows": rows,
        "timed": timed,
    }
    lines = [
        f"# tune moe live on the GPU ({case}, budget {budget}, vLLM's full 1,920 space)",
        "",
        "| M | landscape best, recorded us | the same, re-timed now us | shipped-files memory: "
        "us now (speed, found by) | no memory: us now (speed, found by) |",
        "| ---: | ---: | ---: | --- | --- |",
    ]
    for row in rows:
        now = row["recorded_best_now_us"]
        arms = [
            f"{row[label]['us_now']:.1f} ({now / row[label]['us_now']:.3f}, {row[label]['origin']})"
            for label in ("shipped", "no-memory")
        ]
        cells = [str(row["m"]), f"{row['recorded_best_us']:.1f}", f"{now:.1f}", *arms]
        lines.append("| " + " | ".join(cells) + " |")
    write_result(out, "live", result, "\n".join(lines) + "\n")
    return result


def _best(result: Any, m: int) -> dict[str, Any]:
    best = result.best(m)
    if best is None:
        raise RuntimeError(f"no configuration ran at batch size {m}")
    return dict(best)


if __name__ == "__main__":
    sys.exit(main())
