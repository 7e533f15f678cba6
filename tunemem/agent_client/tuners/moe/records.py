"""What `tunemem tune moe` sends back to the memory for one round of one batch size: the
outcomes of the memory's suggestions that were timed, and the round as a native trajectory
(latencies in ms; the timing function's microseconds / 1000).
"""

from __future__ import annotations

import uuid
from typing import Any

from tunemem.agent_client.models import Outcome


def outcomes(
    timed: list[dict[str, Any]], best_us: float | None, provenance: dict[str, Any] | None
) -> list[tuple[str, Outcome, list[str]]]:
    """The outcomes of a round's timed suggestions, each against its retrieval:
    (retrieval id, outcome, credited lessons); `best_us`: the batch size's best before."""
    out = []
    best = best_us
    for row in timed:
        if row.get("retrieval_id") and row.get("lessons"):
            ok = row["us"] is not None
            outcome = Outcome(
                compiled=ok,
                correct=True if ok else None,
                latency_ms=row["us"] / 1e3 if ok else None,
                best_before_ms=best / 1e3 if best is not None else None,
                error=None if ok else (row.get("error") or "failed")[:200],
                provenance=dict(provenance) if provenance else None,
                # vLLM's benchmark answers the mean of its runs, not their spread
                config=dict(row["config"]),
            )
            out.append((str(row["retrieval_id"]), outcome, list(row["lessons"])))
        if row["us"] is not None:
            best = row["us"] if best is None else min(best, row["us"])
    return out


def trajectory(
    task: dict[str, Any],
    context: dict[str, Any],
    timed: list[dict[str, Any]],
    evidence: dict[str, Any],
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One round of one batch size as a native trajectory record (latencies in ms)."""
    attempts = []
    for index, row in enumerate(timed):
        ok = row["us"] is not None
        attempts.append(
            {
                "index": index,
                "params": dict(row["config"]),
                "code": None,
                "compiled": ok,
                "correct": True if ok else None,
                "error_category": None if ok else "runtime",
                "error": None if ok else (row.get("error") or "failed")[:500],
                "latency_ms": row["us"] / 1e3 if ok else None,
                "latency_min_ms": None,
                "repetitions": None,
                "metrics": {},
            }
        )
    return {
        "version": 1,
        "source_format": "native",
        "source": f"tunemem-tune-moe:{uuid.uuid4().hex[:12]}",
        "task": task,
        "context": context,
        "attempts": attempts,
        "baseline_latency_ms": None,
        "evidence": {
            "tuner": "tunemem tune moe",
            "origins": [row["origin"] for row in timed],
            "latency_ms": "the timing function's microseconds / 1000",
            **{k: v for k, v in evidence.items() if k != "best_before_us"},
        },
        "synthetic": False,
        # One round times a few configurations of the batch size: a partial run.
        "provenance": {**(provenance or {"origin": "unstated"}), "coverage": "partial"},
    }
