"""Memories for the live benchmark, prepared in worker processes while the GPU works.

Each memory is a fresh service (`bench.common.arms.LIVE_SERVICE_SETTINGS`: embedded store,
in-memory index, no near-duplicate merging, the embedder the run names:
MiniLM on ONNX Runtime by default, as the service's own default) behind its own HTTP server in
a spawned process. It ingests the source sweeps; for the value arms the agent
then tunes every source shape in replay (the recorded sweep played back, no GPU), with that
shape's own lessons hidden, so lessons gather values about how they carry over from one shape
to another before the held-out shape is tuned live. The main process reaches each memory over
HTTP only, as any agent would; it asks for them in the order it uses them, and at most
`workers` are alive at a time.

Nothing here imports torch: the workers only serve and replay.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tunemem.bench.common.arms import ARMS, LIVE_SERVICE_SETTINGS, WIDEN_K
from tunemem.ingest.records import TrajectoryRecord

PREP_TIMEOUT_S = 600.0


def load_sweeps(folder: Path, task: str) -> dict[str, TrajectoryRecord]:
    """The recorded sweep of each shape of a task, by shape name (empty when none).

    `<task>.jsonl` holds the harness's own sweeps; a task without one (decode attention) may
    have the live sweeps of an earlier run of this benchmark in `live-<task>.jsonl`.
    """
    from tunemem.kernels.sweep import read_trajectories

    path = folder / f"{task}.jsonl"
    if path.exists():
        return {r.evidence.get("shape_name", r.source): r for r in read_trajectories(path)}
    live = folder / f"live-{task}.jsonl"
    if not live.exists():
        return {}
    return {
        r.evidence.get("shape_name", r.source): r
        for r in read_trajectories(live)
        if r.evidence.get("role") == "sweep" and r.evidence.get("live_reference")
    }


@dataclass(frozen=True)
class MemorySpec:
    """One memory to prepare: what it ingests and, for value arms, what it replays first."""

    key: str
    sources: tuple[TrajectoryRecord, ...]
    replay: tuple[TrajectoryRecord, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    budget: int = 10
    k: int = 3
    seed: int = 0
    settings: dict[str, Any] = field(default_factory=lambda: dict(LIVE_SERVICE_SETTINGS))


def plan_memories(
    op: str, name: str, cases: list[str], sweeps: dict[str, dict[str, TrajectoryRecord]], args: Any
) -> tuple[list[MemorySpec], dict[str, list[tuple[str, str, str]]], str | None]:
    """The memories of a task's held-out shapes, in the order they are used.

    Returns the specs, per held-out shape its (setting, arm, key) triples, and a note when the
    all_tasks setting is skipped because no other task shares the op (the service gates
    lessons by op, so it would equal same_task).
    """
    own = sweeps[name]
    others = [
        r
        for other, by_shape in sweeps.items()
        if other != name
        for r in by_shape.values()
        if r.task.op == op
    ]
    specs: list[MemorySpec] = []
    plan: dict[str, list[tuple[str, str, str]]] = {}
    for case in cases:
        if case not in own:
            continue
        same = [r for shape, r in own.items() if shape != case]
        sources = {"same_task": same, "all_tasks": same + others}
        plan[case] = []
        for setting in args.settings:
            if setting == "all_tasks" and not others:
                continue
            for arm in args.arms:
                options = ARMS[arm]
                if options is None:
                    continue
                key = f"{name}/{case}/{setting}/{arm}"
                replay = tuple(sources[setting]) if arm != "similarity" else ()
                specs.append(
                    MemorySpec(
                        key,
                        tuple(sources[setting]),
                        replay,
                        dict(options),
                        args.budget,
                        args.k,
                        args.seed,
                        {**LIVE_SERVICE_SETTINGS, "embedder": args.embedder},
                    )
                )
                plan[case].append((setting, arm, key))
    note = None
    if "all_tasks" in args.settings and not others:
        note = (
            f"{name}: all_tasks skipped: no other task shares op {op!r}, and the service "
            "gates lessons by op, so it would equal same_task"
        )
    return specs, plan, note


def replay_sources(spec: MemorySpec, url: str) -> int:
    """Tune each replay source against the memory at `url`; returns the attempts made."""
    from tunemem.agent_client.client import MemoryClient
    from tunemem.agent_client.graph import signature_key
    from tunemem.agent_client.proposers import create_proposer
    from tunemem.agent_client.run import run_graph
    from tunemem.kernels.runners.replay import Recording, ReplayRunner

    attempts = 0
    with MemoryClient(url) as client:
        for i, record in enumerate(spec.replay):
            result = run_graph(
                ReplayRunner(recording=Recording.from_trajectory(record)),
                create_proposer("structured"),
                client,
                spec.budget,
                run_id=f"{spec.key}/src{i}",
                seed=spec.seed,
                k=spec.k,
                widen_k=WIDEN_K,
                options=spec.options,
                hidden_signatures=(signature_key(record.task.op, record.task.signature),),
                full_description=True,
            )
            attempts += len(result.attempts)
    return attempts


def _serve(spec: MemorySpec, conn: Connection) -> None:
    """Worker: build the memory, hand its URL to the parent, serve until told to stop."""
    from tunemem.bench.common.memory_server import LiveService

    started = time.monotonic()
    live = None
    try:
        live = LiveService(spec.settings)
        summary = live.service.ingest(list(spec.sources))
        replayed = replay_sources(spec, live.url) if spec.replay else 0
        conn.send(
            {
                "url": live.url,
                "prep_s": time.monotonic() - started,
                "lessons": getattr(summary, "lessons_added", None),
                "replayed_attempts": replayed,
            }
        )
        conn.recv()  # the parent's "stop"
    except Exception as exc:  # reported to the parent, which records it and goes on
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        if live is not None:
            live.close()
        conn.close()


class MemoryPool:
    """Prepares memories ahead of use, at most `workers` alive at once."""

    def __init__(self, specs: list[MemorySpec], workers: int = 6) -> None:
        self._ctx = mp.get_context("spawn")
        self._pending = list(specs)
        self._alive: dict[str, tuple[Any, Connection]] = {}
        self._ready: dict[str, dict[str, Any]] = {}
        self.workers = max(1, workers)
        self._fill()

    def _fill(self) -> None:
        while self._pending and len(self._alive) < self.workers:
            spec = self._pending.pop(0)
            parent, child = self._ctx.Pipe()
            process = self._ctx.Process(target=_serve, args=(spec, child), daemon=True)
            process.start()
            child.close()
            self._alive[spec.key] = (process, parent)

    def acquire(self, key: str) -> dict[str, Any]:
        """The prepared memory's URL and preparation facts (waits until it is ready)."""
        if key not in self._alive:
            self._fill()
        if key not in self._alive:
            raise KeyError(f"memory {key!r} was not planned or was already released")
        if key not in self._ready:
            _, conn = self._alive[key]
            if not conn.poll(PREP_TIMEOUT_S):
                raise TimeoutError(f"memory {key} not ready after {PREP_TIMEOUT_S:.0f}s")
            self._ready[key] = conn.recv()
        return self._ready[key]

    def release(self, key: str) -> None:
        """Stop the memory's server and start preparing the next one."""
        if key not in self._alive:
            return
        process, conn = self._alive.pop(key)
        self._ready.pop(key, None)
        try:
            conn.send("stop")
        except (BrokenPipeError, OSError):
            pass
        process.join(timeout=30)
        if process.is_alive():
            process.terminate()
        self._fill()

    def skip(self, keys: list[str]) -> None:
        """Drop planned memories that will not be used (e.g. past the time budget)."""
        self._pending = [spec for spec in self._pending if spec.key not in set(keys)]
        for key in [k for k in keys if k in self._alive]:
            self.release(key)

    def close(self) -> None:
        self._pending.clear()
        for key in list(self._alive):
            self.release(key)
