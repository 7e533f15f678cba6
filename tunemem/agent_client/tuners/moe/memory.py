"""What the fused-MoE tuner asks of the memory, and what it sends back, over HTTP only.

Three things: the tuned files other GPUs shipped (vLLM's files as the memory holds them: one
exemplar lesson per file, its hint listing the configuration chosen per batch size), ranked
for a target shape, batch size and chip; suggestions of `POST /v1/suggest` given this run's
observations (the service's performance model learns from what the run has reported so far);
and every timing, reported back as a trajectory per batch size and round plus outcomes of the
suggestions timed.

The memory is untrusted, on the tuners' policy (`memory_link`): every request is bounded by
one deadline (answer included), never retried, and its answer capped; every shipped entry and
every suggestion is checked against the layer (a positive E and N) and vLLM's space
(`kernels.moe_space.config_problem`) before it may be timed, and what fails the checks is
counted, never timed. The first failure prints one warning and the memory is left alone for
the rest of the run: the tuning goes on without it. A memory that answers 429 is busy, not
away: that request's help is skipped and the next round asks again.
"""

from __future__ import annotations

import math
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from tunemem.agent_client.models import Outcome
from tunemem.agent_client.tuners.memory_answers import usable_suggestions
from tunemem.agent_client.tuners.memory_link import (
    MAX_ANSWER_BYTES,
    MemoryBusyError,
    MemoryLink,
    MemoryLinkError,
    brief,
)
from tunemem.kernels.moe_space import (
    PARAMS,
    config_key,
    config_problem,
    normalise,
    shape_distance,
    shape_problem,
)

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
# Pages of shipped files read at most (10,000 files; vLLM ships a few hundred): a memory that
# answers full pages for ever is cut here.
MAX_PAGES = 20
# Suggest answers in a row holding nothing usable before the memory is not asked again.
IDLE_ANSWERS = 2


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


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def entries_of(lesson: Any) -> list[ShippedEntry]:
    """A vLLM exemplar lesson's per-batch-size entries: none when it is another kind, names
    no MoE layer (E and N positive integers), or holds nothing of vLLM's space; an entry whose
    configuration is outside vLLM's space is left out."""
    lesson = _object(lesson)
    applicability = _object(lesson.get("applicability"))
    signature = _object(applicability.get("signature"))
    hint = _object(lesson.get("hint"))
    chips = _list(applicability.get("chips"))
    if signature.get("block_shape") or signature.get("backend") or not chips:
        return []  # block-quantised and other backends are other kernels
    if shape_problem(signature.get("E"), signature.get("N")) or not isinstance(chips[0], str):
        return []
    experts, n = int(signature["E"]), int(signature["N"])
    dtype = _dtype_of(signature) if signature.get("dtype") else "bfloat16"
    out = []
    for group in _list(hint.get("by_shape")):
        group = _object(group)
        try:
            config = normalise(_object(group.get("config")))
        except (KeyError, ValueError, TypeError, OverflowError):
            continue
        if config_problem(config):
            continue
        for shape in _list(group.get("shapes")):
            m = _object(shape).get("M")
            if isinstance(m, int) and not isinstance(m, bool) and m >= 1:
                out.append(
                    ShippedEntry(str(lesson.get("id")), chips[0], experts, n, dtype, m, config)
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
    """The memory's part in one tuning run; every call fails soft after one warning.

    Args:
        url: the memory's address (None, with no client: no memory).
        client: an object with `MemoryClient`'s `list_lessons`, `suggest`, `report` and
            `upload_trajectories` (tests, a replayed dump); its calls get the same deadline.
        api_key, timeout_s, max_answer_bytes: the link's (`memory_link.MemoryLink`).
    """

    def __init__(
        self,
        url: str | None,
        client: Any | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self.url = url
        self.link = (
            MemoryLink(
                url or "http://client",
                api_key,
                timeout_s=timeout_s,
                max_answer_bytes=max_answer_bytes,
                client=client,
            )
            if url is not None or client is not None
            else None
        )
        self.down = self.link is None
        self.warnings: list[str] = []
        self.sent = 0
        self.failed_reports = 0
        self.refused = 0  # suggestions outside the run's pool (vLLM's space), tried or malformed
        self.busy = 0  # requests answered 429
        self.idle = 0  # suggest answers in a row with nothing usable and something refused

    def _fail(self, what: str, exc: BaseException) -> None:
        if isinstance(exc, MemoryBusyError):
            self.busy += 1
            if self.busy == 1:
                self.warnings.append(
                    f"tunemem: memory at {self.url} busy ({what}); asked again next round"
                )
            return
        why = str(exc)[:200] if isinstance(exc, MemoryLinkError) else brief(exc)
        message = f"tunemem: memory at {self.url} unavailable ({what}: {why})"
        self.down = True
        self.warnings.append(message)
        warnings.warn(message + "; tuning goes on without it", MemoryUnavailableWarning, 3)

    def shipped(self) -> list[ShippedEntry]:
        """Every per-batch-size entry of the shipped files the memory holds (those of a MoE
        layer and of vLLM's space: `entries_of`)."""
        if self.down or self.link is None:
            return []
        out: list[ShippedEntry] = []
        try:
            for page_no in range(MAX_PAGES):
                page = self.link.list_lessons(
                    op=OP, kind="exemplar", limit=PAGE, offset=page_no * PAGE
                )
                lessons = page.get("data") if isinstance(page, dict) else None
                if not isinstance(lessons, list):
                    raise ValueError("the answer holds no list of lessons")
                for lesson in lessons:
                    out.extend(entries_of(lesson))
                if len(lessons) < PAGE:
                    break
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
        (retrieval id, [(config, source, lesson ids)]); only untried configurations of
        `valid` (the run's pool, all of vLLM's space) come back."""
        if self.down or self.link is None:
            return None, []
        params: dict[str, list[int]] = {p: sorted({c[p] for c in valid}) for p in PARAMS}
        body_obs = [
            {"config": c, "latency_ms": us / 1e3, "feasible": True}
            if us is not None
            else {"config": c, "feasible": False}
            for c, us in observations
        ]
        try:
            answer = self.link.suggest(
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
        usable, refused = usable_suggestions(
            answer,
            params,
            [config_key(c) for c in valid],
            [config_key(c) for c, _ in observations],
        )
        out = []
        for item in usable:
            config = {p: item.config[p] for p in PARAMS}
            if config_problem(config):
                refused += 1
                continue
            out.append((config, item.source, item.lessons))
        self.refused += refused
        self.idle = self.idle + 1 if refused and not out else 0
        if self.idle >= IDLE_ANSWERS:
            self._fail(
                "suggest",
                ValueError(
                    f"{self.idle} answers in a row held no untried configuration of vLLM's "
                    f"space ({self.refused} suggestion(s) refused)"
                ),
            )
            return None, []
        rid = answer.get("retrieval_id")
        return (rid if isinstance(rid, str) else None), out

    def report(
        self,
        task: dict[str, Any],
        context: dict[str, Any],
        timed: list[dict[str, Any]],
        evidence: dict[str, Any],
        provenance: dict[str, Any] | None = None,
    ) -> None:
        """One round of one batch size back to the memory: outcomes of the suggestions that
        were timed (against their retrieval), then the round as a trajectory; `provenance`
        ({origin, device_reported}) says how the timings were obtained."""
        if self.down or self.link is None or not timed:
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
                        provenance=dict(provenance) if provenance else None,
                        # vLLM's benchmark answers the mean of its runs, not their spread
                        config=dict(row["config"]),
                    )
                    self.link.report(row["retrieval_id"], outcome, used=row["lessons"])
                if row["us"] is not None:
                    best = row["us"] if best is None else min(best, row["us"])
            self.link.upload_trajectories([trajectory(task, context, timed, evidence, provenance)])
            self.sent += 1
        except Exception as exc:
            self.failed_reports += 1
            self._fail("report", exc)

    def close(self) -> None:
        if self.link is not None:
            self.link.close()


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
