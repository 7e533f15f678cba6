"""`tunemem moe search-space`: the memory's ranked fused-MoE candidates as SGLang's
`--search-space-file` (`agent_client.tuners.moe.search_space`), for SGLang's own tuner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tunemem.cli.common import console, err
from tunemem.cli.tune import DTYPE_ALIASES, _batch_sizes, _fail

moe_app = typer.Typer(help="Fused-MoE configurations from the memory: search-space.")


@moe_app.callback()
def _moe() -> None:
    """Fused-MoE configurations from the memory."""


@moe_app.command("search-space")
def search_space_cmd(
    experts: Annotated[int, typer.Option("--experts", "-E", help="experts E")],
    n: Annotated[int, typer.Option("--n", "-N", help="intermediate size per shard (vLLM's N)")],
    hidden: Annotated[int, typer.Option(help="hidden size K")],
    topk: Annotated[int, typer.Option(help="experts per token")],
    device_name: Annotated[str, typer.Option(help="the GPU's name, as torch gives it")],
    out: Annotated[Path, typer.Option(help="the JSON file to write")],
    dtype: Annotated[str, typer.Option(help="bfloat16 (bf16) or fp8_w8a8 (fp8)")] = "bfloat16",
    batch_sizes: Annotated[
        str | None, typer.Option(help="comma-separated (default: SGLang's 18, 1 to 4096)")
    ] = None,
    size: Annotated[int, typer.Option(help="configurations in the file, at most")] = 64,
    url: Annotated[
        str | None, typer.Option("--url", envvar="TUNEMEM_URL", help="the memory's address")
    ] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TUNEMEM_API_KEY")] = None,
) -> None:
    """Write the memory's best configurations for this layer and GPU as a JSON list, for
    SGLang's `tuning_fused_moe_triton.py --tune --search-space-file OUT`."""
    from tunemem.agent_client.tuners.moe.rounds import MoeShape
    from tunemem.agent_client.tuners.moe.search_space import search_space
    from tunemem.kernels.moe_space import VLLM_BATCH_SIZES

    if dtype not in DTYPE_ALIASES:
        raise _fail(f"--dtype must be one of bfloat16, bf16, fp8_w8a8, fp8, not {dtype!r}")
    if size < 1:
        raise _fail(f"--size must be at least 1, not {size}")
    if out.exists() and out.is_dir():
        raise _fail(f"--out {out} is a folder; give the file to write")
    try:
        shape = MoeShape(experts, n, hidden, topk, DTYPE_ALIASES[dtype])
        found = search_space(
            shape,
            device_name,
            _batch_sizes(batch_sizes) or list(VLLM_BATCH_SIZES),
            memory_url=url,
            api_key=api_key,
            size=size,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    for warning in found.warnings:
        err.print(warning)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found.sglang_file(), indent=2) + "\n")
    shipped = sum(origin.startswith("shipped:") for origin in found.origins)
    memory = (
        f"{shipped} from other GPUs' files in the memory"
        if found.memory_used
        else "without a memory (vLLM's defaults and a seeded sample)"
    )
    console.print(f"wrote {out}: {len(found.configs)} configurations, {memory}")
