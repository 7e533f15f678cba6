"""The agent on a live runner: tune a catalogue kernel at one shape on this machine.

`run_live` builds a `cuda` runner (compile, check and time on the GPU) or a `cpu` runner
(compile and check through Triton's interpreter: feasibility only, no latency) and runs the
same graph as a replay run. The harness's correctness and anti-hacking checks decide whether
an attempt is feasible; each attempt keeps its latency distribution and cost, and the run
keeps the runner's evidence (toolchain versions, template hash, device).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tunemem.agent_client.run import AgentRunResult, run_with_memory
from tunemem.kernels.runners import create_runner
from tunemem.kernels.runners.base import Runner

LIVE_RUNNERS = ("cuda", "cpu")


def parse_dims(text: str) -> dict[str, int]:
    """`rows=4096,cols=8192` as a dict of ints; a malformed item raises ValueError."""
    dims: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--dims item {item!r} is not name=value")
        try:
            dims[name.strip()] = int(value)
        except ValueError as exc:
            message = f"--dims value of {name.strip()!r} is not an integer: {value!r}"
            raise ValueError(message) from exc
    if not dims:
        raise ValueError("--dims names no dimension")
    return dims


def live_runner(
    kind: str,
    kernel: str,
    *,
    shape: str | None = None,
    dims: dict[str, int] | None = None,
    dtype: str | None = None,
    space: str | None = None,
    warmup_ms: float = 10.0,
    rep_ms: float = 40.0,
) -> Runner:
    """A live runner of `kernel` at a named shape or explicit dims (ValueError when invalid)."""
    if kind not in LIVE_RUNNERS:
        raise ValueError(f"unknown live runner {kind!r}; valid: {', '.join(LIVE_RUNNERS)}")
    if shape is not None and dims is not None:
        raise ValueError("give a shape name or dims, not both")
    kwargs: dict[str, Any] = {"task": kernel, "shape": shape if shape is not None else dims}
    if dtype:
        kwargs["dtype"] = dtype
    if space:
        kwargs["space"] = space
    if kind == "cuda":
        kwargs.update(warmup_ms=warmup_ms, rep_ms=rep_ms)
    try:
        return create_runner(kind, **kwargs)
    except KeyError as exc:  # unknown kernel or shape name: the message lists the valid ones
        raise ValueError(str(exc.args[0]) if exc.args else str(exc)) from exc


def config_text(config: Mapping[str, Any]) -> str:
    """A configuration as the run's lines print it: name=value, space-separated."""
    return " ".join(f"{name}={value}" for name, value in config.items())


def summary_line(result: AgentRunResult, plateau: int | None = None) -> str:
    """The run's last line: the best latency (3 significant digits) with its configuration,
    or, without timings, what was feasible; and why the run stopped, in words."""
    tried = len(result.attempts)
    feasible = [a for a in result.attempts if a["feasible"]]
    reasons = {
        "plateau": f"stopped: {plateau} attempts without improvement" if plateau else "plateau",
        "budget": "the attempt budget is spent",
    }
    why = reasons.get(result.stop_reason or "", result.stop_reason or "stopped")
    if result.best_latency_ms is not None:
        config = config_text(result.best_config or {})
        return f"best {result.best_latency_ms:.3g} ms with {config} after {tried} attempts ({why})"
    if feasible and all(a["latency_ms"] is None for a in feasible):
        return (
            f"{len(feasible)} of {tried} attempts feasible (compiled, correct, did the work); "
            f"no latency: the {result.evidence.get('runner', 'runner')} runner decides "
            f"feasibility only, first feasible {config_text(feasible[0]['config'])} ({why})"
        )
    return f"no feasible attempt in {tried} ({why})"


def run_live(
    base_url: str | None,
    runner: Runner,
    budget: int,
    *,
    proposer: str = "suggest",
    k: int = 3,
    options: dict[str, Any] | None = None,
    plateau: int | None = None,
    seed: int = 0,
    api_key: str | None = None,
    run_id: str | None = None,
    checkpoint: str | Path | None = None,
    write_back: bool = True,
    llm: dict[str, Any] | None = None,
    on_attempt: Callable[[dict[str, Any]], None] | None = None,
) -> AgentRunResult:
    """Tune on a live runner for up to `budget` attempts against the service at `base_url`.

    Args:
        base_url: the memory service; None runs without memory.
        runner: from `live_runner`.
        budget, proposer, k, options, plateau, seed, run_id, checkpoint, write_back: as for
            `run_agent`.
        llm: url, model and api_key for the `llm` proposer.
        on_attempt: called with each attempt (see `format_attempt`).
    """
    return run_with_memory(
        runner,
        proposer,
        llm,
        base_url,
        api_key,
        budget,
        run_id=run_id,
        seed=seed,
        k=k,
        options=options,
        plateau=plateau,
        write_back=write_back,
        checkpoint=Path(checkpoint) if checkpoint else None,
        on_attempt=on_attempt,
        full_description=True,
    )
