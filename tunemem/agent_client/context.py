"""Run settings and live collaborators of one agent run (LangGraph runtime context).

Not checkpointed: on resume the caller hands in a fresh context, the state comes from the
checkpoint. The runner lives here and only the evaluate node touches it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.proposers.base import Proposer
from tunemem.ingest.records import ContextSpec
from tunemem.kernels.runners.base import Runner

# What `run_agent` and `tunemem agent run` stop after without an improvement: past the recorded
# optimum, further attempts only spend budget. The graph itself has no default (benchmarks
# compare arms at fixed budgets and run them whole).
DEFAULT_PLATEAU = 8


@dataclass(kw_only=True)
class AgentContext:
    """How one run behaves and what it talks to."""

    runner: Runner = field(
        metadata={"description": "evaluates configurations (evaluate node only)"}
    )
    proposer: Proposer = field(metadata={"description": "chooses the next configuration"})
    client: MemoryClient | None = field(
        default=None, metadata={"description": "memory API client; None runs without memory"}
    )
    k: int = field(default=3, metadata={"description": "lessons per retrieval"})
    widen_k: int = field(
        default=10,
        metadata={"description": "lessons asked for again while none of k carries a configuration"},
    )
    options: dict[str, Any] | None = field(
        default=None, metadata={"description": "per-request ranking overrides (lam, backoff, ...)"}
    )
    hidden_chips: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "chips whose own lessons the proposer is not shown (a benchmark's "
            "source runs: tuning a chip already in memory with its own exemplars would teach "
            "values about that chip, not about transfer)"
        },
    )
    hidden_signatures: tuple[str, ...] = field(
        default=(),
        metadata={
            "description": "task signatures (graph.signature_key) whose own lessons the "
            "proposer is not shown: a benchmark's source run on one shape of a kernel learns "
            "how the other shapes' lessons carry over"
        },
    )
    trajectory_context: ContextSpec | None = field(
        default=None,
        metadata={"description": "the full context (toolchain, model, scenario) of the run"},
    )
    dtype: str | None = field(default=None, metadata={"description": "the task's dtype"})
    task_details: dict[str, Any] | None = field(
        default=None,
        metadata={
            "description": "kernel, dtype, model and scenario sent with every retrieval (live "
            "runs know them; replay runs of Kernel Tuner caches send op and signature only)"
        },
    )
    plateau: int | None = field(
        default=None,
        metadata={"description": "stop after this many attempts without improvement"},
    )
    write_back: bool = field(
        default=False,
        metadata={"description": "upload the run's trajectory at the end so it is distilled"},
    )
    on_attempt: Callable[[dict[str, Any]], None] | None = field(
        default=None, metadata={"description": "called with each attempt's history entry"}
    )
