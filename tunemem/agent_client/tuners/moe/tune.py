"""`tune_moe`: a vLLM fused-MoE config file for a new GPU, tuned in rounds with the memory.

For one MoE layer (E experts, intermediate size N per shard, hidden size, top-k, dtype) and a
list of batch sizes, every batch size is tuned in rounds, each round timing a few
configurations with the caller's timing function (vLLM's `benchmark_config` signature; by
default this project's Triton kernel, `kernels.moe_timing.benchmark_config`):

1. the first round times what other GPUs chose: the shipped files the memory holds for the
   same and nearby (E, N), ranked by shape, batch size and how alike their GPU is to this one
   (`memory.rank_shipped`), plus vLLM's default configuration for the batch size;
2. later rounds time, for each batch size, the best configurations found so far at the two
   nearest batch sizes of this run, the memory's suggestions given this batch size's
   observations (`POST /v1/suggest`: the service's performance model learns from what the run
   has reported), and one-step moves around the batch size's best so far;
3. every round's timings go back to the memory before the next round.

The memory unreachable, erring or empty: one warning, then the same rounds without it, the
first round being vLLM's default plus a seeded random sample of the space (`FALLBACK_SEED`).
The result is vLLM's file: name `E=..,N=..,device_name=..[,dtype=fp8_w8a8].json`, keys the
batch sizes, values the six launch parameters.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunemem.agent_client.tuners.moe.memory import MoeMemory, chip_similarities
from tunemem.agent_client.tuners.moe.rounds import (
    FALLBACK_SEED,
    Benchmark,
    MoeShape,
    Run,
    default_benchmark,
    first_round,
    later_round,
    runtime_device_name,
)
from tunemem.ingest.provenance import device_contradiction
from tunemem.kernels.moe_space import (
    PARAMS,
    VLLM_BATCH_SIZES,
    config_key,
    config_problem,
    default_config,
    file_name,
    full_space,
)

__all__ = ["FALLBACK_SEED", "Benchmark", "MoeShape", "MoeTuning", "NothingTimedError", "tune_moe"]


class NothingTimedError(ValueError):
    """No configuration of any batch size timed: no file is written and nothing was sent."""


def _provenance(
    benchmark: Benchmark | None, device_name: str | None, replayed: bool
) -> tuple[str, dict[str, Any]]:
    """(the device the file is for, how the run's timings are obtained), or ValueError when
    nothing can be timed here or the runtime contradicts the device named."""
    if replayed:
        if not device_name:
            raise ValueError("a replay names no GPU: give device_name (the recording's GPU)")
        return device_name, {"origin": "replayed", "device_reported": None}
    runtime = runtime_device_name()
    if benchmark is None and runtime is None:
        raise ValueError(
            "no GPU here: this project's kernel times on a CUDA GPU; nothing can be timed "
            "(give a recorded landscape with --replay, or --benchmark module:function)"
        )
    device = device_name or runtime
    if device is None:
        raise ValueError("no GPU here: give device_name (vLLM's file name carries it)")
    if runtime is not None:
        problem = device_contradiction(device, runtime)
        if problem:
            raise ValueError(f"{problem}; leave device_name out to tune this GPU")
    return device, {"origin": "measured", "device_reported": runtime}


DEFAULT_BUDGET = 32  # configurations timed per batch size (vLLM's tuner times 1,920)
FIRST_ROUND = 8
PER_ROUND = 6


@dataclass
class MoeTuning:
    """What a run chose and everything it timed (rows: config, us, error, origin, round)."""

    shape: MoeShape
    device_name: str
    batch_sizes: list[int]
    timed: dict[int, list[dict[str, Any]]]
    memory_used: bool
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None

    def best(self, m: int) -> dict[str, Any] | None:
        rows = [r for r in self.timed[m] if r["us"] is not None]
        return min(rows, key=lambda r: r["us"]) if rows else None

    def vllm_configs(self) -> dict[str, dict[str, int]]:
        """vLLM's file body: batch size (a string) -> configuration, every batch size."""
        out = {}
        for m in self.batch_sizes:
            row = self.best(m)
            config = (
                row["config"] if row else default_config(m, self.shape.experts, self.shape.dtype)
            )
            out[str(m)] = {p: int(config[p]) for p in PARAMS}
        return out

    def file_name(self) -> str:
        return file_name(self.shape.experts, self.shape.n, self.device_name, self.shape.dtype)

    def write(self, folder: Path) -> Path:
        """Write vLLM's file into `folder`; returns its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.file_name()
        path.write_text(json.dumps(self.vllm_configs(), indent=4) + "\n")
        self.path = path
        return path


def tune_moe(
    shape: MoeShape,
    batch_sizes: list[int] | tuple[int, ...] = VLLM_BATCH_SIZES,
    benchmark: Benchmark | None = None,
    *,
    memory_url: str | None = None,
    client: Any | None = None,
    device_name: str | None = None,
    budget: int = DEFAULT_BUDGET,
    space: list[dict[str, int]] | None = None,
    out: Path | None = None,
    seed: int = 0,
    api_key: str | None = None,
    timeout_s: float = 10.0,
    replayed: bool = False,
) -> MoeTuning:
    """Tune every batch size in rounds with the memory; write vLLM's file into `out` if given.

    Args:
        shape: the MoE layer (E, N per shard, hidden size, top-k, dtype).
        batch_sizes: the file's keys (default: vLLM's 18).
        benchmark: vLLM's `benchmark_config(config, num_tokens, num_experts,
            shard_intermediate_size, hidden_size, topk, dtype, use_fp8_w8a8, use_int8_w8a16)`
            returning microseconds (raise for a configuration that fails); default: this
            project's kernel on this GPU.
        memory_url / client: the memory (None: no memory, the documented sample); `client`
            is an object with `MemoryClient`'s methods, bounded like the link.
        device_name: the GPU's name as torch gives it (default: this GPU's).
        budget: configurations timed per batch size at most.
        space: the configurations allowed, each of vLLM's space (default: vLLM's 1,920 plus
            every configuration of vLLM's space the shipped files in the memory hold).
        out: a folder for the file, checked before the first timing (it is created, and
            must be a writable folder).
        seed: the seed of the rounds' random choices.
        api_key, timeout_s: the memory's key and the deadline of each request to it.
        replayed: `benchmark` answers from a recording: the run is stored as replayed, never
            as a measurement on `device_name` (implied for `kernels.moe_recorded`'s functions).

    Raises:
        ValueError: bad input (a batch size, the budget, a configuration of `space` outside
            vLLM's space, an `out` that is no writable folder), before anything is timed; no
            GPU here and no `benchmark`; a `device_name` this GPU's runtime contradicts.
        NothingTimedError: every configuration failed (nothing written, nothing sent).
    """
    sizes = sorted({int(m) for m in batch_sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"batch sizes must be positive integers, not {list(batch_sizes)}")
    if budget < 1:
        raise ValueError(f"budget must be at least 1, not {budget}")
    pool = _checked_space(space) if space is not None else full_space()
    replayed = replayed or getattr(benchmark, "recording", None) is not None
    if out is not None:
        check_out(out)
    device, provenance = _provenance(benchmark, device_name, replayed)
    memory = MoeMemory(
        memory_url if memory_url is not None or client is None else "client",
        client,
        api_key=api_key,
        timeout_s=timeout_s,
    )
    try:
        shipped = memory.shipped()
        if not memory.down and not shipped:
            memory.warnings.append("tunemem: the memory holds no shipped fused-MoE file")
        if space is None:
            keys = {config_key(c) for c in pool}
            for entry in shipped:
                if config_problem(entry.config) is None and config_key(entry.config) not in keys:
                    keys.add(config_key(entry.config))
                    pool.append(dict(entry.config))
        context = {"chip": device, "backend": "cuda"}
        run = Run(
            shape,
            sizes,
            benchmark or default_benchmark(),
            memory,
            device,
            pool,
            budget,
            seed,
            context,
        )
        run.provenance = provenance
        sims = chip_similarities(device, {e.chip for e in shipped}) if shipped else {}
        for m in sizes:
            run.time_round(m, first_round(run, m, shipped, sims, min(FIRST_ROUND, budget)), 1)
        round_no = 1
        while len(run.exhausted) < len(sizes):
            round_no += 1
            for m in sizes:
                left = budget - len(run.timed[m])
                if m in run.exhausted or left <= 0:
                    run.exhausted.add(m)
                    continue
                picks = later_round(run, m, min(PER_ROUND, left), round_no)
                if not picks:
                    run.exhausted.add(m)
                    continue
                run.time_round(m, picks, round_no)
        if not run.any_timed():
            errors = [r["error"] for rows in run.timed.values() for r in rows if r["error"]]
            raise NothingTimedError(
                f"nothing was timed on {device}: all {len(errors)} configurations failed "
                f"(the first: {errors[0] if errors else 'none tried'}); no file written, "
                "nothing sent to the memory"
            )
        result = MoeTuning(shape, device, sizes, run.timed, bool(shipped), list(memory.warnings))
        if out is not None:
            result.write(out)
        return result
    finally:
        memory.close()


def _checked_space(space: list[dict[str, int]]) -> list[dict[str, int]]:
    """The caller's configurations, each of vLLM's space (a ValueError names the first that
    is not)."""
    pool = []
    for i, config in enumerate(space):
        problem = config_problem(dict(config) if isinstance(config, dict) else config)
        if problem:
            raise ValueError(f"space[{i}] is outside vLLM's space: {problem}")
        pool.append(dict(config))
    if not pool:
        raise ValueError("the space holds no configuration")
    return pool


def check_out(out: Path) -> None:
    """Make `out` a writable folder now, so a run never ends in a file it cannot write."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".tunemem-", suffix=".tmp"):
            pass
    except OSError as exc:
        raise ValueError(f"--out {out} is not a writable folder ({exc.strerror or exc})") from exc
