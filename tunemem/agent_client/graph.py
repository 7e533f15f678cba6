"""The tuning agent as a LangGraph `StateGraph` (DESIGN section 8).

    recall -> propose -> evaluate -> report -> distill -> decide -> recall | END

recall asks the memory service for lessons; propose hands the proposer a `ProposalRequest`
built from state alone; evaluate (the only node holding the runner) measures the proposal;
report tells the service what happened, under an idempotency key fixed per attempt so a
resumed run does not count a report twice; distill uploads the finished run's trajectory when
write-back is on; decide loops until the budget, a plateau, or an exhausted space.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from tunemem.agent_client.context import AgentContext
from tunemem.agent_client.credit import credited, lesson_summary, timing_spread
from tunemem.agent_client.models import Outcome, Retrieval, RetrievedLesson
from tunemem.agent_client.proposers.base import (
    AttemptOutcome,
    ProposalError,
    ProposalRequest,
    TaskDescription,
)
from tunemem.agent_client.state import AgentInput, AgentState
from tunemem.ingest.provenance import Provenance
from tunemem.ingest.records import ContextSpec, TaskSpec, TrajectoryRecord


def query_text(task: dict[str, Any], stage: str, params: list[str]) -> str:
    """The retrieval query; constant per (task, chip, stage) so the service can cache it."""
    goal = "a first configuration that works" if stage == "draft" else "a faster configuration"
    return (
        f"Tune the {task['op']} kernel on {task['chip']} ({task['backend']}): {goal}. "
        f"Parameters: {', '.join(params)}."
    )


def signature_key(op: str, signature: dict[str, Any]) -> str:
    """A task's identity for hiding: its op and its signature, as one canonical string."""
    return json.dumps([op, signature], sort_keys=True, default=str)


def visible(
    lessons: list[RetrievedLesson],
    hidden_chips: tuple[str, ...],
    hidden_signatures: tuple[str, ...] = (),
) -> list[RetrievedLesson]:
    """The lessons the proposer may see: all but those recorded only on a hidden chip or for
    a hidden task signature (`signature_key`)."""
    hidden = set(hidden_chips)
    signatures = set(hidden_signatures)

    def shown(lesson: RetrievedLesson) -> bool:
        chips = lesson.applicability.get("chips")
        if hidden and chips and set(chips) <= hidden:
            return False
        if signatures:
            key = signature_key(
                str(lesson.applicability.get("op")), lesson.applicability.get("signature") or {}
            )
            return key not in signatures
        return True

    return [lesson for lesson in lessons if shown(lesson)]


def recall(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    if ctx.client is None:
        return {"retrieval": None, "proposal": None, "result": None}
    task = state["task"]
    stage = state.get("stage", "draft")

    details = ctx.task_details or {}

    def ask(k: int) -> Retrieval:
        assert ctx.client is not None
        return ctx.client.retrieve(
            task={
                "op": task["op"],
                "signature": task.get("signature") or {},
                **{key: details[key] for key in ("kernel", "dtype") if details.get(key)},
            },
            context={
                "chip": task["chip"],
                "backend": task["backend"],
                "model": details.get("model"),
                "scenario": details.get("scenario"),
            },
            stage=stage,  # type: ignore[arg-type]
            k=k,
            query=query_text(task, stage, list(state["space"])),
            options=ctx.options,
        )

    retrieval = ask(ctx.k)
    # When none of the k lessons carries a configuration not tried yet (only warnings, or
    # exemplars already used), nothing new is actionable: ask once more for a wider list.
    space = list(state["space"])
    tried = {tuple(h["config"].get(p) for p in space) for h in state.get("history") or []}
    if ctx.widen_k > ctx.k and not any(
        isinstance((lesson.hint or {}).get("config"), dict)
        and tuple(lesson.hint["config"].get(p) for p in space) not in tried  # type: ignore[index]
        for lesson in visible(retrieval.lessons, ctx.hidden_chips, ctx.hidden_signatures)
    ):
        retrieval = ask(ctx.widen_k)
    lessons = [
        lesson.to_json()
        for lesson in visible(retrieval.lessons, ctx.hidden_chips, ctx.hidden_signatures)
    ]
    return {
        "retrieval": {
            "retrieval_id": retrieval.retrieval_id,
            "lessons": lessons,
            "settings": retrieval.settings,
            "scope_chain": retrieval.scope_chain,
            "warnings": retrieval.warnings,
        },
        "seen_lessons": {lesson["id"]: lesson for lesson in lessons},
        "proposal": None,
        "result": None,
    }


def proposal_request(state: AgentState) -> ProposalRequest:
    """The proposer's whole view of the world, from checkpointed state only."""
    retrieved = (state.get("retrieval") or {}).get("lessons", [])
    current = [RetrievedLesson(**item) for item in retrieved]
    current_ids = {lesson.id for lesson in current}
    seen = [
        RetrievedLesson(**item)
        for lesson_id, item in (state.get("seen_lessons") or {}).items()
        if lesson_id not in current_ids
    ]
    history = tuple(
        AttemptOutcome(
            index=h["index"],
            config=dict(h["config"]),
            feasible=h["feasible"],
            latency_ms=h["latency_ms"],
            error_category=h.get("error_category"),
            used=tuple(h.get("used") or ()),
            origin=h.get("origin", ""),
            **(timing_spread(h) if h["feasible"] else {}),
        )
        for h in state.get("history") or []
    )
    return ProposalRequest(
        task=TaskDescription(**state["task"]),
        space={name: tuple(values) for name, values in state["space"].items()},
        stage=state.get("stage", "draft"),  # type: ignore[arg-type]
        lessons=tuple(current),
        seen_lessons=tuple(seen),
        history=history,
        seed=state["seed"],
    )


def propose(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    try:
        proposal = runtime.context.proposer.propose(proposal_request(state))
    except ProposalError as exc:
        return {"stop_reason": f"exhausted: {exc}"}
    return {
        "proposal": {
            "config": dict(proposal.config),
            "used": list(proposal.used),
            "origin": proposal.origin,
            "rationale": proposal.rationale,
        }
    }


def after_propose(state: AgentState) -> Literal["evaluate", "distill"]:
    return "distill" if state.get("stop_reason") else "evaluate"


def evaluate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    proposal = state["proposal"] or {}
    result = runtime.context.runner.evaluate(dict(proposal["config"]))
    return {
        "result": {
            "feasible": result.feasible,
            "compiled": result.compiled,
            "correct": result.correct,
            "latency_ms": result.latency_ms,
            "error_category": result.error_category,
            "error": result.error,
            "latency_min_ms": result.latency_min_ms,
            "repetitions": result.repetitions,
            "metrics": dict(result.metrics),
        }
    }


def _outcome_provenance(ctx: AgentContext) -> dict[str, Any]:
    """The runner's provenance as an outcome carries it (an outcome has no coverage)."""
    provenance = ctx.runner.provenance()
    return {"origin": provenance.origin, "device_reported": provenance.device_reported}


def report(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    proposal = state["proposal"] or {}
    result = state["result"] or {}
    index = state.get("attempts", 0)
    best_before = state.get("best_latency_ms")
    rewards: dict[str, float] = {}
    values: dict[str, Any] = {}
    retrieval = state.get("retrieval")
    if ctx.client is not None and retrieval is not None:
        receipt = ctx.client.report(
            retrieval["retrieval_id"],
            Outcome(
                compiled=bool(result["compiled"]),
                correct=result["correct"] if result["feasible"] else False,
                latency_ms=result["latency_ms"],
                best_before_ms=best_before,
                error=result["error_category"],
                provenance=_outcome_provenance(ctx),
                config=dict(proposal["config"]),
                **timing_spread(result),
            ),
            used=credited(proposal["used"], retrieval.get("lessons", []), proposal["config"]),
            idempotency_key=f"{state['run_id']}:{index}",
        )
        rewards, values = receipt.rewards, receipt.values
    used_ids = set(proposal["used"]) | set(rewards)
    lessons = [
        lesson_summary(lesson, values)
        for lesson in (retrieval or {}).get("lessons", [])
        if lesson["id"] in used_ids
    ]
    latency = result["latency_ms"] if result["feasible"] else None
    improved = latency is not None and (best_before is None or latency < best_before)
    entry = {
        "index": index,
        "stage": state.get("stage", "draft"),
        "config": proposal["config"],
        "origin": proposal["origin"],
        "used": proposal["used"],
        "feasible": result["feasible"],
        "latency_ms": latency,
        "error_category": result["error_category"],
        "error": result.get("error"),
        "compiled": result["compiled"],
        "correct": result["correct"],
        "latency_min_ms": result.get("latency_min_ms") if latency is not None else None,
        "repetitions": result.get("repetitions"),
        "metrics": dict(result.get("metrics") or {}),
        "best_ms": latency if improved else best_before,
        "lessons": lessons,
        "rewards": rewards,
        "retrieval_id": retrieval["retrieval_id"] if retrieval else None,
    }
    if ctx.on_attempt is not None:
        ctx.on_attempt(entry)
    update: dict[str, Any] = {
        "history": [entry],
        "attempts": index + 1,
        "since_improvement": 0 if improved else state.get("since_improvement", 0) + 1,
        "stage": "refine" if result["feasible"] else state.get("stage", "draft"),
    }
    if improved:
        update["best_latency_ms"] = latency
        update["best_config"] = proposal["config"]
    return update


def stop_reason(state: AgentState, ctx: AgentContext) -> str | None:
    if state.get("stop_reason"):
        return state["stop_reason"]
    if state.get("attempts", 0) >= state["budget"]:
        return "budget"
    if ctx.plateau and state.get("since_improvement", 0) >= ctx.plateau:
        return "plateau"
    return None


def trajectory_of(
    state: AgentState,
    evidence: dict[str, Any] | None = None,
    context: ContextSpec | None = None,
    dtype: str | None = None,
    provenance: Provenance | None = None,
) -> TrajectoryRecord:
    """The run as a canonical trajectory, for write-back through `POST /v1/trajectories` and
    for saving as a native trajectory file.

    Each attempt keeps its error, latency distribution (`metrics`) and cost; `evidence` (the
    runner's: toolchain, template hash, device) and the proposer's origins go with the run.
    """
    from tunemem.ingest.records import AttemptRecord

    task = state["task"]
    history = state.get("history") or []
    attempts = [
        AttemptRecord(
            index=h["index"],
            params=dict(h["config"]),
            compiled=h.get("compiled", h["error_category"] not in ("compile", "rejected")),
            correct=True if h["feasible"] else h.get("correct"),
            error_category=h["error_category"],
            error=h.get("error"),
            latency_ms=h["latency_ms"],
            latency_min_ms=h.get("latency_min_ms"),
            repetitions=h.get("repetitions"),
            metrics={
                k: float(v)
                for k, v in (h.get("metrics") or {}).items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            },
        )
        for h in history
    ]
    return TrajectoryRecord(
        source_format="native",
        source=f"agent-run:{state['run_id']}",
        task=TaskSpec(
            op=task["op"],
            kernel=task.get("kernel"),
            signature=task.get("signature") or {},
            dtype=dtype,
        ),
        context=context or ContextSpec(chip=task["chip"], backend=task["backend"]),
        attempts=attempts,
        evidence={
            **(evidence or {}),
            "agent_run": state["run_id"],
            "origins": [h.get("origin", "") for h in history],
            "lessons_used": [list(h.get("used") or []) for h in history],
            "stop_reason": state.get("stop_reason"),
        },
        provenance=provenance or Provenance(),
    )


def distill(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    if not ctx.write_back or ctx.client is None or stop_reason(state, ctx) is None:
        return {}
    if not any(h["feasible"] for h in state.get("history") or []):
        return {"write_back": {"skipped": "no feasible attempt"}}
    record = trajectory_of(
        state,
        ctx.runner.evidence(),
        ctx.trajectory_context,
        ctx.dtype,
        ctx.runner.provenance(),
    )
    summary = ctx.client.upload_trajectories([record.to_dict()])
    return {"write_back": summary}


def decide(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    return {"stop_reason": stop_reason(state, runtime.context)}


def after_decide(state: AgentState) -> Literal["recall", "__end__"]:
    return "__end__" if state.get("stop_reason") else "recall"


def build_graph(checkpointer: Checkpointer = None) -> Any:
    """Compile the agent graph, optionally with a checkpointer (SQLite for resumable runs)."""
    builder = StateGraph(AgentState, context_schema=AgentContext, input_schema=AgentInput)
    builder.add_node("recall", recall)
    builder.add_node("propose", propose)
    builder.add_node("evaluate", evaluate)
    builder.add_node("report", report)
    builder.add_node("distill", distill)
    builder.add_node("decide", decide)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "propose")
    builder.add_conditional_edges("propose", after_propose)
    builder.add_edge("evaluate", "report")
    builder.add_edge("report", "distill")
    builder.add_edge("distill", "decide")
    builder.add_conditional_edges("decide", after_decide)
    return builder.compile(checkpointer=checkpointer)


graph = build_graph()
