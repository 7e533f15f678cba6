"""What the fused-MoE tuner asks of the memory, and what it sends back, over HTTP only.

Three things: the tuned files other GPUs shipped (vLLM's files as the memory holds them: one
exemplar lesson per file, its hint listing the configuration chosen per batch size), ranked
for a target shape, batch size and chip; suggestions of `POST /v1/suggest` given this run's
observations (the service's performance model learns from what the run has reported so far);
and every timing, reported back as a trajectory per batch size and round plus outcomes of the
suggestions timed.

The memory is untrusted, on the tuners' one policy (`memory_policy.MemoryGuard` over
`memory_link`), as the Triton drop-in: every request is bounded by one deadline (answer
included), never retried, and its answer capped; a failure prints one warning
(`MemoryUnavailableWarning`, the tuners' one class) and the memory is left alone (five
minutes: in practice the rest of the run); a memory that answers 429 is busy, not away, and is
left alone for its Retry-After. Reports and uploads go on the guard's background thread; the
next question waits for them at most one deadline, so the service's model has learnt from the
round before it suggests. Every shipped entry and every suggestion is checked against the
layer (a positive E and N) and vLLM's space (`kernels.moe_space.config_problem`) before it may
be timed, and what fails the checks is counted, never timed.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from tunemem.agent_client.tuners.memory_answers import usable_suggestions
from tunemem.agent_client.tuners.memory_link import MAX_ANSWER_BYTES, MemoryLink
from tunemem.agent_client.tuners.memory_policy import MemoryGuard, MemoryUnavailableWarning
from tunemem.agent_client.tuners.moe.records import outcomes, trajectory
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

__all__ = ["MemoryUnavailableWarning", "MoeMemory", "ShippedEntry", "entries_of", "rank_shipped"]


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
    """The memory's part in one tuning run, on the tuners' policy (see the module).

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
        self.timeout_s = timeout_s
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
        self.guard = MemoryGuard(self.link, self._warn, note=self._note)
        self.warnings: list[str] = []
        self.sent = 0
        self.refused = 0  # suggestions outside the run's pool (vLLM's space), tried or malformed
        self.idle = 0  # suggest answers in a row with nothing usable and something refused

    @property
    def down(self) -> bool:
        """No memory, or it failed in this run (and is left alone)."""
        return self.link is None or self.guard.failures > 0

    @property
    def busy(self) -> int:
        """Questions the memory answered 429."""
        return self.guard.busy

    def _warn(self, message: str) -> None:
        line = f"tunemem: memory at {self.url} {message}"
        self.warnings.append(line)
        warnings.warn(line + "; tuning goes on without it", MemoryUnavailableWarning, 2)

    def _note(self, message: str) -> None:
        self.warnings.append(f"tunemem: memory at {self.url} {message}")

    def shipped(self) -> list[ShippedEntry]:
        """Every per-batch-size entry of the shipped files the memory holds (those of a MoE
        layer and of vLLM's space: `entries_of`)."""
        return self.guard.ask("listing shipped configurations", _shipped) or []

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
        if not self.guard.available:
            return None, []
        # The round before has gone back first: the service's model learns from it.
        self.guard.flush(self.timeout_s)
        params: dict[str, list[int]] = {p: sorted({c[p] for c in valid}) for p in PARAMS}
        body_obs = [
            {"config": c, "latency_ms": us / 1e3, "feasible": True}
            if us is not None
            else {"config": c, "feasible": False}
            for c, us in observations
        ]
        answer = self.guard.ask(
            "suggest",
            lambda link: link.suggest(
                task=task,
                context=context,
                space={"params": params, "valid": valid},
                observations=body_obs,
                k=max(1, min(k, 100)),
                stage="refine",
                seed=seed,
            ),
        )
        if answer is None:
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
            self.guard.fail(
                f"unavailable (suggest: {self.idle} answers in a row held no untried "
                f"configuration of vLLM's space; {self.refused} suggestion(s) refused)"
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
        ({origin, device_reported}) says how the timings were obtained. Sent in the
        background (`memory_policy.MemoryGuard.submit`); dropped while the memory is left
        alone after a failure."""
        if not timed or not self.guard.sending:
            return
        reports = outcomes(timed, evidence.get("best_before_us"), provenance)
        run = trajectory(task, context, timed, evidence, provenance)

        def send(link: MemoryLink) -> None:
            for retrieval_id, outcome, used in reports:
                link.report(retrieval_id, outcome, used=used)
            link.upload_trajectories([run])
            self.sent += 1

        self.guard.submit(send)

    def close(self) -> None:
        """Wait for the reports in flight (two deadlines at most), then close the link."""
        if self.link is not None:
            self.guard.flush(2 * self.timeout_s)
        self.guard.close()


def _shipped(link: MemoryLink) -> list[ShippedEntry]:
    """Every page of the memory's vLLM exemplars, read into entries (`MAX_PAGES` at most);
    ValueError when a page holds no list of lessons."""
    out: list[ShippedEntry] = []
    for page_no in range(MAX_PAGES):
        page = link.list_lessons(op=OP, kind="exemplar", limit=PAGE, offset=page_no * PAGE)
        lessons = page.get("data") if isinstance(page, dict) else None
        if not isinstance(lessons, list):
            raise ValueError("the answer holds no list of lessons")
        for lesson in lessons:
            out.extend(entries_of(lesson))
        if len(lessons) < PAGE:
            break
    return out
