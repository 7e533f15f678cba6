"""Prompt text of the LLM proposer: the task, the rendered lessons, its own past outcomes."""

from __future__ import annotations

import json

from tunemem.agent_client.models import RetrievedLesson
from tunemem.agent_client.proposers.base import ProposalRequest

SYSTEM_PROMPT = """You tune a GPU kernel by choosing values for its tuning parameters.
Each turn you propose ONE configuration that has not been tried yet. Use the lessons (experience
from other runs, ranked by a memory service; warnings say what to avoid) and the outcomes of your
own attempts so far. Answer with a single JSON object and nothing else:
{"config": {"<parameter>": <value>, ...}, "used": ["<lesson id>", ...], "rationale": "<short>"}
Every parameter must be present and take one of its allowed values. "used" lists the ids of the
lessons that shaped your choice (empty if none)."""


def render_lessons(request: ProposalRequest) -> str:
    if not request.lessons:
        return "(no lessons returned)"
    lines = []
    for lesson in request.lessons:
        text = lesson.rendered_text or lesson.text
        tag = ("WARNING " if lesson.warning else "") + (
            "STALE (measured under an older compiler; re-check) " if lesson.stale else ""
        )
        hint = f" hint={json.dumps(lesson.hint, sort_keys=True)}" if lesson.hint else ""
        lines.append(f"- [{lesson.id}] {tag}({lesson.kind}) {text}{hint}{render_glossary(lesson)}")
    return "\n".join(lines)


def render_glossary(lesson: RetrievedLesson) -> str:
    """A transferred lesson's terms on this chip, caveats first-class: the lesson keeps its own
    words, so the proposer needs the mapping (and what it changes) spelled out."""
    parts = []
    for entry in lesson.glossary:
        counterpart = entry.get("counterpart") or "no counterpart"
        detail = entry.get("caveat") or entry.get("note")
        parts.append(f"{entry.get('term')} -> {counterpart}" + (f" ({detail})" if detail else ""))
    return ("\n    terms here: " + "; ".join(parts)) if parts else ""


def render_history(request: ProposalRequest) -> str:
    if not request.history:
        return "(no attempts yet)"
    lines = []
    for attempt in request.history:
        if attempt.feasible:
            outcome = f"{attempt.latency_ms:.4g} ms"
        else:
            outcome = f"failed ({attempt.error_category})"
        lines.append(f"{attempt.index}: {json.dumps(attempt.config, sort_keys=True)} -> {outcome}")
    return "\n".join(lines)


def user_prompt(request: ProposalRequest) -> str:
    task = request.task
    space = {name: list(values) for name, values in request.space.items()}
    return (
        f"Task: {task.op} (kernel {task.kernel or task.op}), signature "
        f"{json.dumps(task.signature, sort_keys=True)}, on chip {task.chip} ({task.backend}).\n"
        f"Stage: {request.stage} ("
        + ("find a configuration that works" if request.stage == "draft" else "make it faster")
        + ").\n"
        f"Parameter space: {json.dumps(space)}\n\n"
        f"Lessons:\n{render_lessons(request)}\n\n"
        f"Your attempts so far (lower latency is better):\n{render_history(request)}\n"
    )


def repair_prompt(problem: str) -> str:
    return f"That answer could not be used: {problem}. Reply again with the JSON object only."
