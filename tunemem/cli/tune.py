"""`tunemem tune moe`: a vLLM / SGLang fused-MoE config file for this GPU, tuned with the memory.

The command parses the options and calls `agent_client.tuners.moe.tune_moe`, which reaches the
memory over HTTP (`--url`); it times with this project's Triton kernel on this GPU, with a
function of the caller's (`--benchmark module:function`, vLLM's `benchmark_config`
signature), or from a recorded landscape (`--replay`, no GPU needed).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from tunemem.cli.common import console, err

tune_app = typer.Typer(help="Tune kernels with the memory: moe.", no_args_is_help=True)

DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp8": "fp8_w8a8",
    "fp8_w8a8": "fp8_w8a8",
}


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"error: {message}")
    return typer.Exit(code)


def _batch_sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise _fail(f"--batch-sizes takes integers separated by commas, not {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise _fail(f"--batch-sizes must be positive integers, not {text!r}")
    return sizes


def _user_benchmark(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise _fail(f"--benchmark takes module:function, not {spec!r}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise _fail(f"cannot load --benchmark {spec!r}: {exc}") from exc


@tune_app.command("moe")
def tune_moe_cmd(
    experts: Annotated[int, typer.Option("--experts", "-E", help="experts E")],
    n: Annotated[int, typer.Option("--n", "-N", help="intermediate size per shard (vLLM's N)")],
    hidden: Annotated[int, typer.Option(help="hidden size K")],
    topk: Annotated[int, typer.Option(help="experts per token")],
    dtype: Annotated[str, typer.Option(help="bfloat16 (bf16) or fp8_w8a8 (fp8)")] = "bfloat16",
    batch_sizes: Annotated[
        str | None, typer.Option(help="comma-separated (default: vLLM's 18, 1 to 4096)")
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", envvar="TUNEMEM_URL", help="the memory's address")
    ] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TUNEMEM_API_KEY")] = None,
    device_name: Annotated[
        str | None, typer.Option(help="GPU name as torch gives it (default: this GPU's)")
    ] = None,
    budget: Annotated[int, typer.Option(help="configurations timed per batch size")] = 32,
    out: Annotated[Path, typer.Option(help="folder for the config file")] = Path("."),
    sglang: Annotated[
        bool,
        typer.Option(
            "--sglang",
            help="SGLang's layout: the file goes into OUT/configs/triton_<x_y_z>/ for the "
            "installed Triton (then SGLANG_MOE_CONFIG_DIR=OUT)",
        ),
    ] = False,
    benchmark: Annotated[
        str | None, typer.Option(help="module:function with vLLM's benchmark_config signature")
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="time from a recorded landscape (tunemem.kernels.moe_sweep); stored as "
            "replayed, with --device-name the recording's GPU"
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the rounds' random choices")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="print the run as JSON")] = False,
) -> None:
    """Tune every batch size in rounds with the memory; write vLLM's file into --out."""
    from tunemem.agent_client.tuners.moe.tune import MoeShape, NothingTimedError, tune_moe

    if dtype not in DTYPE_ALIASES:
        raise _fail(f"--dtype must be one of bfloat16, bf16, fp8_w8a8, fp8, not {dtype!r}")
    if benchmark and replay:
        raise _fail("give --benchmark or --replay, not both")
    try:
        shape = MoeShape(experts, n, hidden, topk, DTYPE_ALIASES[dtype])
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    sizes = _batch_sizes(batch_sizes)
    space = None
    timing = _user_benchmark(benchmark) if benchmark else None
    if replay is not None:
        from tunemem.kernels.moe_recorded import recorded_benchmark

        try:
            timing, space, recorded = recorded_benchmark(replay)
        except (OSError, ValueError) as exc:
            raise _fail(f"cannot read --replay {replay}: {exc}") from exc
        if sizes is None:
            sizes = recorded
        elif missing := sorted(set(sizes) - set(recorded)):
            raise _fail(f"--replay {replay} has no timings for batch sizes {missing}")
    if budget < 1:
        raise _fail(f"--budget must be at least 1, not {budget}")
    if sglang:
        from tunemem.kernels.moe_space import sglang_version_dir

        out = out / "configs" / sglang_version_dir(_triton_version())
    try:
        result = tune_moe(
            shape,
            sizes or list(_vllm_sizes()),
            timing,
            memory_url=url,
            api_key=api_key,
            device_name=device_name,
            budget=budget,
            space=space,
            out=out,
            seed=seed,
            replayed=replay is not None,
        )
    except NothingTimedError as exc:
        raise _fail(str(exc), code=1) from exc
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if json_out:
        body = {
            "file": str(result.path),
            "configs": result.vllm_configs(),
            "timed": {str(m): len(rows) for m, rows in result.timed.items()},
            "memory_used": result.memory_used,
            "warnings": result.warnings,
        }
        console.print_json(json.dumps(body))
        return
    for m in result.batch_sizes:
        best = result.best(m)
        found = f"{best['us']:.1f} us, {best['origin']}" if best else "none ran: vLLM's default"
        console.print(f"M={m}: {len(result.timed[m])} timed, best {found}")
    memory = "with the memory" if result.memory_used else "without a memory (seeded sample)"
    console.print(f"wrote {result.path} ({memory})")


def _triton_version() -> str:
    """The installed Triton's version, as SGLang reads it (`triton.__version__`)."""
    try:
        import triton
    except ImportError as exc:
        raise _fail(
            "--sglang names the folder after the installed Triton, and Triton is not "
            f"installed here ({exc}); `make install-triton` installs it"
        ) from exc
    return str(triton.__version__)


def _vllm_sizes() -> tuple[int, ...]:
    from tunemem.kernels.moe_space import VLLM_BATCH_SIZES

    return VLLM_BATCH_SIZES
