"""`run_agent`: tune one task on one chip with the agent graph against a memory service.

The task is a recorded search space (a Kernel Tuner cache file, or a folder of them from which
the chip's file is picked) run through the replay runner, or any runner the caller builds.
With a checkpoint file a killed run resumes where it stopped when called again with the same
run id.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.context import DEFAULT_PLATEAU, AgentContext
from tunemem.agent_client.graph import build_graph, trajectory_of
from tunemem.agent_client.proposers import create_proposer
from tunemem.agent_client.proposers.base import Proposer, TaskDescription
from tunemem.kernels.runners.base import Runner
from tunemem.kernels.runners.replay import Recording, ReplayRunner


@dataclass
class AgentRunResult:
    """What a run did: every attempt (with the lessons used and their values) and the best."""

    run_id: str
    task: dict[str, Any]
    attempts: list[dict[str, Any]] = field(default_factory=list)
    best_latency_ms: float | None = None
    best_config: dict[str, Any] | None = None
    stop_reason: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    trajectory: dict[str, Any] | None = None  # the run as a native trajectory record

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _recording_for(task: Path, chip: str | None) -> Recording:
    if task.is_file():
        recording = Recording(task)
        if chip and recording.context.chip != _normalise_chip(chip):
            raise ValueError(f"{task} records chip {recording.context.chip!r}, not {chip!r}")
        return recording
    if not chip:
        raise ValueError("a folder of recordings needs --chip to pick one")
    wanted = _normalise_chip(chip)
    for path in sorted(task.glob("*.json*")):
        if path.name.endswith(("_T4.json", "_T4.json.gz")):
            continue
        recording = Recording(path)
        if recording.context.chip == wanted:
            return recording
    raise ValueError(f"no recording for chip {chip!r} under {task}")


def _normalise_chip(chip: str) -> str:
    try:
        from tunemem.platforms import resolve

        return resolve(chip).id
    except ImportError:
        return chip.strip().lower()


def runner_for(task: str | Path, chip: str | None) -> Runner:
    """The replay runner of a recording file, or of the chip's file in a folder of them."""
    path = Path(task)
    if not path.exists():
        raise ValueError(
            f"task {task!r} is not a recording; pass a Kernel Tuner cache file or folder, "
            "or give run_agent a runner"
        )
    return ReplayRunner(recording=_recording_for(path, chip))


def describe(runner: Runner, chip: str | None = None) -> TaskDescription:
    """The public task description of a runner (its task and context, no measurements)."""
    try:
        task, context = runner.description()
    except NotImplementedError as exc:
        raise ValueError("the runner does not describe its task and context") from exc
    return TaskDescription(
        op=task.op,
        chip=chip and _normalise_chip(chip) or context.chip,
        backend=context.backend,
        kernel=task.kernel,
        signature=dict(task.signature),
    )


def _number(value: float | None, sign: bool = False) -> str:
    """Three significant digits ("0.241", "-0.0629", "+1"); "n/a" for None."""
    if value is None:
        return "n/a"
    return f"{value:+.3g}" if sign else f"{value:.3g}"


def _clip(text: str, width: int) -> str:
    """The text whole if it fits, else cut at a word boundary and ended with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def _value_in(
    value: float | None, scope: str | None, n: int | None, estimator: str | None = None
) -> str:
    where = scope or "no scope"
    named = f"{estimator}: " if estimator else ""
    return f"{_number(value)} ({named}{where}, n {n if n is not None else 0})"


def format_attempt(entry: dict[str, Any], text_width: int = 100) -> str:
    """One attempt as the CLI prints it: outcome, origin, the configuration, and for each lesson
    used its value before and after the report, each with the scope it is the value of.

    Values are the lesson's estimate for this context; the scope named is the one carrying the
    most weight, so a value can fall after a +1 reward when a first outcome moves the weight
    from a well-observed broad scope to the chip's own (its Q starts at Q0)."""
    if entry["feasible"] and entry["latency_ms"] is None:
        outcome = "feasible (compiled and correct; no latency measured on this runner)"
    elif entry["feasible"]:
        metrics = entry.get("metrics") or {}
        spread = ""
        if "latency_median_ms" in metrics:
            spread = (
                f", median {_number(metrics['latency_median_ms'])}"
                f" p10 {_number(metrics.get('latency_p10_ms'))}"
                f" p90 {_number(metrics.get('latency_p90_ms'))}"
                f" over {entry.get('repetitions')} runs"
            )
        outcome = f"{_number(entry['latency_ms'])} ms{spread} (best {_number(entry['best_ms'])} ms)"
    else:
        outcome = f"infeasible ({entry['error_category']})"
    # No square brackets: rich-based printers would read them as markup.
    lines = [f"#{entry['index']:>3} ({entry['stage']}) {outcome} via {entry['origin']}"]
    config = " ".join(f"{name}={value}" for name, value in entry["config"].items())
    lines.append(f"      config {config}")
    if not entry["feasible"] and entry.get("error"):
        lines.append(f"      error {_clip(str(entry['error']), text_width)}")
    for lesson in entry["lessons"]:
        after = lesson.get("value_after") or {}
        if not isinstance(after, dict):
            after = {"value": after}
        reward = _number(entry["rewards"].get(lesson["id"]), sign=True)
        before = _value_in(
            lesson.get("value"), lesson.get("value_scope"), lesson.get("n"), lesson.get("estimator")
        )
        now = _value_in(
            after.get("value", after.get("q")),
            after.get("value_scope"),
            after.get("n"),
            after.get("estimator"),
        )
        score = _number(lesson.get("score"))
        lines.append(
            f"      lesson {lesson['id']} ({lesson['kind']}, score {score}):"
            f" value {before} -> {now} after reward {reward}"
        )
        lines.append(f"        {_clip(lesson['text'], text_width)}")
    return "\n".join(lines)


def run_graph(
    runner: Runner,
    proposer: Proposer,
    client: MemoryClient | None,
    budget: int,
    *,
    run_id: str | None = None,
    seed: int = 0,
    k: int = 3,
    widen_k: int = 10,
    options: dict[str, Any] | None = None,
    hidden_chips: tuple[str, ...] = (),
    hidden_signatures: tuple[str, ...] = (),
    plateau: int | None = None,
    write_back: bool = False,
    checkpoint: Path | None = None,
    on_attempt: Callable[[dict[str, Any]], None] | None = None,
    chip: str | None = None,
    full_description: bool = False,
) -> AgentRunResult:
    """Run (or resume, with a checkpoint and the same run id) the agent on a built runner.

    `full_description`: send the task's kernel, dtype, model and scenario with each retrieval
    (the live runs do; replay runs keep to op and signature).

    `hidden_chips`: lessons recorded only on these chips are not shown to the proposer (and so
    never credited); a benchmark's source runs hide their own chip so that what they teach the
    memory is how other chips' lessons carry over.
    """
    run_id = run_id or uuid.uuid4().hex
    task = describe(runner, chip)
    task_spec, full_context = runner.description()
    context = AgentContext(
        runner=runner,
        proposer=proposer,
        client=client,
        k=k,
        widen_k=widen_k,
        options=options,
        hidden_chips=tuple(hidden_chips),
        hidden_signatures=tuple(hidden_signatures),
        trajectory_context=full_context if chip is None else None,
        dtype=task_spec.dtype,
        task_details={
            "kernel": task_spec.kernel,
            "dtype": task_spec.dtype,
            "model": full_context.model,
            "scenario": full_context.scenario,
        }
        if full_description
        else None,
        plateau=plateau,
        write_back=write_back,
        on_attempt=on_attempt,
    )
    config: dict[str, Any] = {
        "configurable": {"thread_id": run_id},
        "recursion_limit": 7 * budget + 20,
    }
    inputs = {
        "run_id": run_id,
        "task": asdict(task),
        "space": runner.parameter_space(),
        "budget": budget,
        "seed": seed,
    }
    if checkpoint is None:
        state = build_graph().invoke(inputs, config, context=context)
    else:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(checkpoint, check_same_thread=False)) as conn:
            graph = build_graph(SqliteSaver(conn))
            saved = graph.get_state(config)
            if saved.values and saved.next:
                state = graph.invoke(None, config, context=context)
            elif saved.values:
                state = saved.values
            else:
                state = graph.invoke(inputs, config, context=context)
    return AgentRunResult(
        run_id=run_id,
        task=asdict(task),
        attempts=list(state.get("history") or []),
        best_latency_ms=state.get("best_latency_ms"),
        best_config=state.get("best_config"),
        stop_reason=state.get("stop_reason"),
        evidence=runner.evidence(),
        trajectory=trajectory_of(
            state, runner.evidence(), context.trajectory_context, context.dtype, runner.provenance()
        ).to_dict(),
    )


def run_agent(
    base_url: str | None,
    task: str | Path,
    chip: str | None,
    budget: int,
    *,
    proposer: str = "suggest",
    k: int = 3,
    options: dict[str, Any] | None = None,
    plateau: int | None = DEFAULT_PLATEAU,
    seed: int = 0,
    api_key: str | None = None,
    run_id: str | None = None,
    checkpoint: str | Path | None = None,
    write_back: bool = True,
    llm_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key: str | None = None,
    on_attempt: Callable[[dict[str, Any]], None] | None = None,
) -> AgentRunResult:
    """Tune `task` on `chip` for up to `budget` attempts, talking to the service at `base_url`.

    Args:
        base_url: the memory service (e.g. http://127.0.0.1:8000); None runs without memory.
        task: a Kernel Tuner cache file, or a folder of them (the chip's file is used).
        chip: the chip to tune on (must match the recording's chip when a file is given).
        budget: the most attempts to make.
        proposer: `suggest` (the service's search: exemplars, then its performance model;
            the default), `structured`, `llm` (needs llm_url and llm_model) or `random`.
        k, options: lessons per retrieval and per-request ranking overrides.
        plateau: stop early after this many attempts without improvement (default
            `DEFAULT_PLATEAU`; None or 0 runs the whole budget).
        run_id, checkpoint: name the run and keep a SQLite checkpoint so it can resume.
        write_back: upload the finished trajectory for distillation.
        on_attempt: called with each attempt (see `format_attempt`).
    """
    runner = runner_for(task, chip)
    llm = {"url": llm_url, "model": llm_model, "api_key": llm_api_key}
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
        chip=chip,
    )


def run_with_memory(
    runner: Runner,
    proposer: str,
    llm: dict[str, Any] | None,
    base_url: str | None,
    api_key: str | None,
    budget: int,
    **graph_options: Any,
) -> AgentRunResult:
    """Build the named proposer and the memory client (none without a URL), run the graph,
    and close the client: the one set-up that the replay and the live doors share."""
    if proposer == "llm":
        if not (llm and llm.get("url") and llm.get("model")):
            raise ValueError("the llm proposer needs llm_url and llm_model")
        chosen = create_proposer("llm", **llm)
    client = MemoryClient(base_url, api_key=api_key) if base_url else None
    if proposer == "suggest":
        chosen = create_proposer("suggest", client=client, options=graph_options.get("options"))
    elif proposer != "llm":
        chosen = create_proposer(proposer)
    try:
        return run_graph(runner, chosen, client, budget, **graph_options)
    finally:
        if client is not None:
            client.close()
