"""Turn a kernel benchmark result into its Markdown table and its goal verdicts.

Every number printed here comes from the result dict that `bench.kernels.run` measured; nothing
is filled in. Goals are the project's benchmark targets, reported as met or missed.
"""

from __future__ import annotations

from typing import Any

LARGE_BYTES = 256e6  # memory-bound goals apply to shapes moving at least this much


def _fmt(value: Any, spec: str = ".3g") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def _config_text(config: dict[str, Any] | None) -> str:
    if not config:
        return "-"
    short = {
        "BLOCK_N": "BN",
        "BLOCK_M": "BM",
        "BLOCK_K": "BK",
        "ROWS_PER_PROGRAM": "R",
        "NUM_STAGES": "S",
        "num_stages": "S",
        "num_warps": "W",
        "GROUP_M": "G",
    }
    return " ".join(f"{short.get(k, k)}{v}" for k, v in config.items())


def _bytes_of(row: dict[str, Any]) -> float | None:
    tput, ms = row.get("triton", {}), row.get("triton", {}).get("median_ms")
    if not ms or tput.get("gbps") is None:
        return None
    return tput["gbps"] * 1e9 * ms / 1e3


def goal_checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The benchmark goals, each with its measured value and whether it was met."""
    checks = []
    for row in result.get("rows", []):
        if "error" in row:
            continue
        task, shape = row["task"], row["shape"]
        if task in ("softmax", "rmsnorm"):
            moved = _bytes_of(row)
            if moved and moved >= LARGE_BYTES and row.get("fraction_of_copy_bw") is not None:
                checks.append(
                    {
                        "goal": f"{task} >= 0.90 of measured copy bandwidth (large sizes)",
                        "task": task,
                        "shape": shape,
                        "target": 0.90,
                        "value": row["fraction_of_copy_bw"],
                        "met": row["fraction_of_copy_bw"] >= 0.90,
                    }
                )
        elif task == "gemm" and shape in ("square-4096", "square-8192"):
            value = row.get("speedup_vs_eager")
            checks.append(
                {
                    "goal": "GEMM >= 0.95x torch (cuBLAS) throughput",
                    "task": task,
                    "shape": shape,
                    "target": 0.95,
                    "value": value,
                    "met": value is not None and value >= 0.95,
                }
            )
        elif task == "attention":
            value = row.get("speedup_vs_eager")
            checks.append(
                {
                    "goal": "attention >= 0.85x torch SDPA throughput",
                    "task": task,
                    "shape": shape,
                    "target": 0.85,
                    "value": value,
                    "met": value is not None and value >= 0.85,
                }
            )
    return checks


def render_markdown(result: dict[str, Any]) -> str:
    """The Markdown report: machine, limits, one row per task and shape, goals."""
    machine, limits = result["machine"], result["limits"]
    desc, copy = limits["descriptor"], limits["measured_copy"]
    settings = result["settings"]
    lines = [
        "# Kernel benchmark",
        "",
        f"Machine: {machine['gpu']} ({machine.get('sms')} SMs), torch {machine['torch']}, "
        f"triton {machine['triton']}, CUDA {machine.get('cuda', '-')}.  ",
        f"Command: `{result['command']}` (run {settings['run_id']}, "
        f"{result['elapsed_s']:.0f} s{', quick' if settings['quick'] else ''}).  ",
        f"Latency: {settings['latency']}; do_bench warm-up {settings['warmup_ms']} ms, "
        f"repetitions {settings['rep_ms']} ms; dtype {settings['dtype']}.  ",
        f"Limits: measured device-to-device copy {copy['gbps']:.0f} GB/s "
        f"({copy['bytes_copied'] / 2**30:.0f} GiB, read + written); descriptor "
        f"{_fmt(desc.get('mem_bandwidth_gbs'))} GB/s and {_fmt(desc.get('peak_bf16_tflops'))} "
        f"bf16 TFLOP/s dense ({desc.get('chip')}).",
    ]
    for run in result.get("runs", []):
        lines.append(
            f"Run {run['run_id']}: `{run['command']}`, copy {run['measured_copy']['gbps']:.0f} "
            f"GB/s, {run['elapsed_s']:.0f} s.  "
        )
    lines += [
        "",
        "| task | shape | model / scenario | best config | tried (ok) | Triton ms | Triton | "
        "eager ms | compile ms | x eager | x compile | of limit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result["rows"]:
        if "error" in row:
            lines.append(
                f"| {row['task']} | {row['shape']} | error: {row['error'][:80]} | | | | | | | | | |"
            )
            continue
        memory = row["bound"] == "memory"
        tput = row["triton"]
        achieved = (
            f"{_fmt(tput['gbps'], '.0f')} GB/s"
            if memory
            else f"{_fmt(tput['tflops'], '.0f')} TFLOP/s"
        )
        if memory:
            limit = (
                f"{_fmt(row.get('fraction_of_copy_bw'), '.0%')} copy, "
                f"{_fmt(row.get('fraction_of_peak'), '.0%')} HBM peak"
            )
        else:
            limit = f"{_fmt(row.get('fraction_of_peak'), '.0%')} bf16 peak"
        context = " / ".join(x for x in (row.get("model"), row.get("scenario")) if x) or "-"
        lines.append(
            f"| {row['task']} | {row['shape']} | {context} | {_config_text(row['best_config'])} "
            f"| {row['configs_tried']} ({row['configs_feasible']}) "
            f"| {_fmt(tput['median_ms'], '.4f')} "
            f"| {achieved} | {_fmt(row['eager'].get('median_ms'), '.4f')} "
            f"| {_fmt(row['compile'].get('median_ms'), '.4f')} "
            f"| {_fmt(row.get('speedup_vs_eager'), '.2f')} "
            f"| {_fmt(row.get('speedup_vs_compile'), '.2f')} | {limit} |"
        )
    goals = result.get("goals") or goal_checks(result)
    if goals:
        lines += [
            "",
            "## Goals",
            "",
            "| goal | shape | target | measured | met |",
            "| --- | --- | --- | --- | --- |",
        ]
        for goal in goals:
            lines.append(
                f"| {goal['goal']} | {goal['shape']} | {goal['target']} "
                f"| {_fmt(goal['value'], '.2f')} | {'yes' if goal['met'] else 'no'} |"
            )
    errors = [
        r
        for r in result["rows"]
        if "error" not in r and (r["eager"].get("error") or r["compile"].get("error"))
    ]
    for row in errors:
        lines.append(
            f"\nBaseline error on {row['task']} {row['shape']}: "
            f"{row['eager'].get('error') or row['compile'].get('error')}"
        )
    return "\n".join(lines) + "\n"
