"""What the fused-MoE tuner asks of the memory, and what it sends back, over HTTP only.

Three things: the tuned files other GPUs shipped (vLLM's files as the memory holds them: one
exemplar lesson per file, its hint listing the configuration chosen per batch size), ranked
for a target shape, batch size and chip; suggestions of `POST /v1/suggest` given this run's
observations (the service's performance model learns from what the run has reported so far);
and every timing, reported back as a trajectory per batch size and round plus outcomes of the
suggestions timed. The first failure prints one warning and the memory is left alone for the
rest of the run: the tuning goes on without it.
"""

from __future__ import annotations

import math
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.models import Outcome
from tunemem.kernels.moe_space import PARAMS, kernel_accepts, normalise, shape_distance

OP = "fused_moe"
KERNEL = "fused_moe_kernel"
# Shipped files further than this (octaves of E plus octaves of N) are not "nearby".
NEARBY_OCTAVES = 1.0
# Weights of a shipped entry's distance: shape octaves, batch-size octaves, chip unlikeness,
# and another dtype. Shape and chip weigh most: a file is one GPU's decision for one layer.
BATCH_WEIGHT = 0.35
CHIP_WEIGHT = 2.0
DTYPE_PENALTY = 1.0
PAGE = 500


class MemoryUnavailableWarning(UserWarning):
    """The memory could not help: the tuner goes on with its documented sample."""


@dataclass(frozen=True)
class ShippedEntry:
    """One batch size of one shipped file: which GPU chose which configuration."""

    lesson_id: str
    chip: str
    experts: int
    n: int
    dtype: str
    m: int
    config: dict[str, int]


def _dtype_of(signature: dict[str, Any]) -> str:
    return "fp8_w8a8" if signature.get("dtype") == "fp8_w8a8" else str(signature.get("dtype"))


def entries_of(lesson: dict[str, Any]) -> list[ShippedEntry]:
    """A vLLM exemplar lesson's per-batch-size entries (none when it is another kind)."""
    applicability = lesson.get("applicability") or {}
    signature = applicability.get("signature") or {}
    hint = lesson.get("hint") or {}
    chips = applicability.get("chips") or []
    if signature.get("block_shape") or signature.get("backend") or not chips:
        return []  # block-quantised and other backends are other kernels
    try:
        experts, n = int(signature["E"]), int(signature["N"])
    except (KeyError, TypeError, ValueError):
        return []
    dtype = _dtype_of(signature) if signature.get("dtype") else "bfloat16"
    out = []
    for group in hint.get("by_shape") or []:
        try:
            config = normalise(group.get("config") or {})
        except (KeyError, ValueError, TypeError):
            continue
        if not kernel_accepts(config):
            continue
        for shape in group.get("shapes") or []:
            if isinstance(shape.get("M"), int):
                out.append(
                    ShippedEntry(str(lesson["id"]), chips[0], experts, n, dtype, shape["M"], config)
                )
    return out


def rank_shipped(
    entries: list[ShippedEntry],
    experts: int,
    n: int,
    dtype: str,
    m: int,
    similarity: dict[str, float],
) -> list[tuple[float, ShippedEntry]]:
    """Nearby entries by distance to (E, N, dtype, M) on the target chip, nearest first; each
    configuration once (at its nearest entry)."""
    scored: dict[tuple[int, ...], tuple[float, ShippedEntry]] = {}
    for entry in entries:
        shape = shape_distance(experts, n, entry.experts, entry.n)
        if shape > NEARBY_OCTAVES:
            continue
        distance = (
            shape
            + BATCH_WEIGHT * abs(math.log2(max(m, 1) / max(entry.m, 1)))
            + CHIP_WEIGHT * (1.0 - similarity.get(entry.chip, 0.0))
            + (0.0 if entry.dtype == dtype else DTYPE_PENALTY)
        )
        key = tuple(entry.config[p] for p in PARAMS)
        if key not in scored or distance < scored[key][0]:
            scored[key] = (distance, entry)
    return sorted(scored.values(), key=lambda pair: (pair[0], tuple(pair[1].config.values())))


def chip_similarities(target: str, chips: set[str]) -> dict[str, float]:
    """How alike each chip is to the target (platforms' descriptors; 0 when unknown)."""
    from tunemem.platforms.similarity import chip_similarity

    out = {}
    for chip in chips:
        try:
            out[chip] = chip_similarity(target, chip)
        except Exception:  # an unknown chip is simply not alike
            out[chip] = 0.0
    return out


class MoeMemory:
    """The memory's part in one tuning run; every call fails soft after one warning."""

    def __init__(self, url: str | None, client: MemoryClient | None = None, **client_kw: Any):
        self.url = url
        self.client = (
            client if client is not None else (MemoryClient(url, **client_kw) if url else None)
        )
        self.down = self.client is None
        self.warnings: list[str] = []
        self.sent = 0
        self.failed_reports = 0

    def _fail(self, what: str, exc: BaseException) -> None:
        text = str(exc).splitlines()[0] if str(exc) else ""
        brief = f"{type(exc).__name__}: {text[:160]}"
        message = f"tunemem: memory at {self.url} unavailable ({what}: {brief})"
        self.down = True
        self.warnings.append(message)
        warnings.warn(message + "; tuning goes on without it", MemoryUnavailableWarning, 3)

    def shipped(self) -> list[ShippedEntry]:
        """Every per-batch-size entry of the shipped files the memory holds."""
        if self.down or self.client is None:
            return []
        out: list[ShippedEntry] = []
        offset = 0
        try:
            while True:
                page = self.client.list_lessons(op=OP, kind="exemplar", limit=PAGE, offset=offset)
                lessons = page.get("data") or []
                for lesson in lessons:
                    out.extend(entries_of(lesson))
                if len(lessons) < PAGE:
                    break
                offset += PAGE
        except Exception as exc:  # whatever the memory does, the tuning goes on
            self._fail("listing shipped configurations", exc)
            return []
        return out

    def suggest(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        valid: list[dict[str, int]],
        observations: list[tuple[dict[str, int], float | None]],
        k: int,
        seed: int,
    ) -> tuple[str | None, list[tuple[dict[str, int], str, list[str]]]]:
        """The service's next configurations of `valid` given the observations:
        (retrieval id, [(config, source, lesson ids)])."""
        if self.down or self.client is None:
            return None, []
        params: dict[str, list[int]] = {p: sorted({c[p] for c in valid}) for p in PARAMS}
        body_obs = [
            {"config": c, "latency_ms": us / 1e3, "feasible": True}
            if us is not None
            else {"config": c, "feasible": False}
            for c, us in observations
        ]
        try:
            answer = self.client.suggest(
                task=task,
                context=context,
                space={"params": params, "valid": valid},
                observations=body_obs,
                k=max(1, min(k, 100)),
                stage="refine",
                seed=seed,
            )
        except Exception as exc:
            self._fail("suggest", exc)
            return None, []
        out = []
        for item in answer.get("suggestions") or []:
            config = item.get("config") or {}
            if set(config) == set(PARAMS):
                ids = [str(lesson["id"]) for lesson in item.get("lessons") or []]
                out.append(({p: int(config[p]) for p in PARAMS}, str(item.get("source")), ids))
        return answer.get("retrieval_id"), out

    def report(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        timed: list[dict[str, Any]],
        evidence: dict[str, Any],
    ) -> None:
        """One round of one batch size back to the memory: outcomes of the suggestions that
        were timed (against their retrieval), then the round as a trajectory."""
        if self.down or self.client is None or not timed:
            return
        try:
            best: float | None = evidence.get("best_before_us")
            for row in timed:
                if row.get("retrieval_id") and row.get("lessons"):
                    ok = row["us"] is not None
                    outcome = Outcome(
                        compiled=ok,
                        correct=True if ok else None,
                        latency_ms=row["us"] / 1e3 if ok else None,
                        best_before_ms=best / 1e3 if best is not None else None,
                        error=None if ok else (row.get("error") or "failed")[:200],
                    )
                    self.client.report(row["retrieval_id"], outcome, used=row["lessons"])
                if row["us"] is not None:
                    best = row["us"] if best is None else min(best, row["us"])
            self.client.upload_trajectories([trajectory(task, context, timed, evidence)])
            self.sent += 1
        except Exception as exc:
            self.failed_reports += 1
            self._fail("report", exc)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def trajectory(
    task: dict[str, Any],
    context: dict[str, Any],
    timed: list[dict[str, Any]],
    evidence: dict[str, Any],
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
    }
