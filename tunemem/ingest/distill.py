"""Deterministic lesson distillation: a trajectory in, `LessonDraft`s out.

Three kinds of lesson, each with applicability, a self-contained text with the measured
numbers, and a hint a structured proposer can use:

- exemplar: the fastest valid configurations (or code), with their ratio to the median valid
  attempt and to the first valid attempt; hint `{"config", "latency_ms", "ratio_to_median",
  "ratio_to_first", "rank"}`. Trajectories without timings (vLLM tuned configs) give one
  unmeasured exemplar per group of shapes sharing a configuration.
- insight (parameter effect): a parameter value whose valid configurations have a median
  latency clearly apart from the overall median; hint `{"param", "value", "effect":
  "prefer"|"avoid", "median_speedup", "n_valid", "n_with_value"}`.
- failure: parameter values (or pairs of values) that mostly fail, with the dominant error
  category; hint `{"avoid": {...}, "failure_rate", "error_category", "n"}`. Trajectories of
  code (no tuning parameters) give one failure lesson per error category with an example.

Same input, same drafts in the same order. An LLM distiller can be plugged in through
`distill(..., llm=...)`; it is off unless a caller passes one.

Only latencies between `MIN_VALID_MS` and `MAX_LATENCY_MS` count as measurements, so every
ratio printed stays finite and non-zero; work is O(n log n) in the attempts (grouping by
sorting, never a pass over all attempts per distinct value), and any failure on a malformed
trajectory comes out as `DistillError`, which the service turns into a reject.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import DistillError
from tunemem.ingest.failure_rules import failing_settings
from tunemem.ingest.records import LessonDraft, TrajectoryRecord
from tunemem.ingest.render import config_text, describe_task, fmt_count, fmt_ms, fmt_ratio
from tunemem.ingest.validate import MAX_LATENCY_MS

# Below a picosecond a "latency" is a unit error or a placeholder, not a measurement.
MIN_VALID_MS = 1e-9
# The unmeasured exemplar lists at most this many shape groups in its text.
MAX_LISTED_GROUPS = 40

# A parameter effect is "clear" at this ratio of medians, either way.
EFFECT_MIN_RATIO = 1.15
EFFECT_MIN_VALID = 20  # below this many valid attempts, effects are noise
EFFECT_MIN_GROUP = 5
MAX_EFFECTS = 6
FAILURE_MIN_RATE = 0.8
FAILURE_MIN_GROUP = 5
MAX_FAILURES = 4
# Trajectories with fewer valid attempts than this give an exemplar only when their spread
# (slowest / fastest) reaches the minimum: otherwise the "best" is measurement noise.
SMALL_TRAJECTORY = 5
SMALL_TRAJECTORY_MIN_SPREAD = 1.2
# Exemplars per trajectory when the caller does not fix them: a few for small searches, more
# for large spaces, where the configurations that carry over to other chips are often not the
# three fastest on the source (convolution on A4000 is reached at 0.99 by MI250X's sixth to
# ninth fastest). sqrt(n_valid) / 6 gives 3 at 324 valid configurations and the cap of 10
# from about 3,600 on.
MIN_EXEMPLARS = 3
MAX_EXEMPLARS = 10


def exemplar_count(n_valid: int) -> int:
    """How many exemplars to emit for a trajectory with `n_valid` valid attempts."""
    return max(MIN_EXEMPLARS, min(MAX_EXEMPLARS, int(np.sqrt(max(n_valid, 0)) / 6)))


LLMDistiller = Callable[[TrajectoryRecord, list[LessonDraft]], list[LessonDraft]]


def distill(
    traj: TrajectoryRecord, *, top_k: int | None = None, llm: LLMDistiller | None = None
) -> list[LessonDraft]:
    """Lessons of one trajectory: exemplars, then parameter effects, then failures.

    Args:
        traj: a trajectory from any reader.
        top_k: the most exemplars to emit; None scales it with the valid attempts
            (`exemplar_count`: 3 for small searches up to 10 for large spaces). Tiny
            trajectories give fewer: at most half the valid attempts, at least one.
        llm: optional extra distiller, given the trajectory and the deterministic drafts,
            returning extra drafts to append. None (the default) keeps distillation
            deterministic and offline.

    Raises:
        DistillError: the trajectory is malformed (check it first with
            `ingest.validate.record_problem` for a precise reason).
    """
    try:
        view = _TrajectoryView(traj)
        drafts = view.exemplars(top_k) + view.parameter_effects() + view.failures()
    except Exception as exc:
        # A malformed trajectory that passed the checks must still end as a reject, not a crash.
        raise DistillError(traj.source, f"{type(exc).__name__}: {str(exc)[:300]}") from exc
    if llm is not None:
        drafts = drafts + list(llm(traj, drafts))
    return drafts


@lru_cache(maxsize=1024)
def _family(chip: str, backend: str) -> str | None:
    if chip == "unknown":
        return None
    ctx = chip_context(chip)
    return ctx.family if ctx.known else None


class _TrajectoryView:
    """Arrays and shared wording over one trajectory, built once."""

    def __init__(self, traj: TrajectoryRecord) -> None:
        self.traj = traj
        attempts = traj.attempts
        self.latency = np.array(
            [a.latency_ms if a.latency_ms is not None else np.nan for a in attempts], dtype=float
        )
        self.feasible = np.array([a.feasible for a in attempts], dtype=bool)
        self.valid = (
            self.feasible
            & np.isfinite(self.latency)
            & (self.latency >= MIN_VALID_MS)
            & (self.latency <= MAX_LATENCY_MS)
        )
        self.n_valid = int(self.valid.sum())
        evidence = traj.evidence
        tuning = evidence.get("tuning_params")
        shape = set(evidence.get("shape_params") or [])
        keys = list(attempts[0].params) if attempts else []
        self.params = [k for k in (tuning if tuning is not None else keys) if k not in shape]
        self.shape_params = [k for k in keys if k in shape]
        self.where = describe_task(traj)
        self.applicability = self._applicability()
        self.provenance = {
            "source_format": traj.source_format,
            "source": traj.source,
            "trajectory_id": traj.id,
            "synthetic": traj.synthetic,
        }
        if traj.context.toolchain:
            # The versions the lesson's evidence was measured under: staleness dates it by them.
            self.provenance["toolchain"] = dict(traj.context.toolchain)

    def _applicability(self) -> dict[str, Any]:
        ctx, task = self.traj.context, self.traj.task
        known_chip = not ctx.chip.startswith("unknown")
        family = _family(ctx.chip, ctx.backend) if known_chip else None
        return {
            "op": task.op,
            "kernel": task.kernel,
            "chips": [ctx.chip] if known_chip else [],
            "families": [family] if family else [],
            "backends": [ctx.backend] if ctx.backend != "unknown" else [],
            "models": [ctx.model] if ctx.model else [],
            "scenarios": [ctx.scenario] if ctx.scenario else [],
            "dtypes": [task.dtype] if task.dtype else [],
            "signature": dict(task.signature),
        }

    def _draft(
        self, kind: str, text: str, hint: dict[str, Any], code: str | None = None
    ) -> LessonDraft:
        return LessonDraft(
            kind=kind,
            text=text,
            applicability=dict(self.applicability),
            hint=hint,
            code=code,
            provenance=dict(self.provenance),
        )

    # -- exemplars -------------------------------------------------------------------------

    def exemplars(self, top_k: int | None) -> list[LessonDraft]:
        if self.n_valid == 0:
            return self._unmeasured_exemplars() if not np.isfinite(self.latency).any() else []
        attempts = self.traj.attempts
        valid_idx = np.flatnonzero(self.valid)
        order = valid_idx[np.lexsort((valid_idx, self.latency[valid_idx]))]
        median = float(np.median(self.latency[valid_idx]))
        first = int(valid_idx[0])
        first_latency = float(self.latency[first])
        wanted = exemplar_count(self.n_valid) if top_k is None else top_k
        k = min(wanted, max(1, self.n_valid // 2))
        has_code = any(attempts[int(i)].code for i in valid_idx)
        if self.n_valid < SMALL_TRAJECTORY and not has_code:
            spread = float(self.latency[order[-1]] / self.latency[order[0]])
            if spread < SMALL_TRAJECTORY_MIN_SPREAD:
                return []  # a handful of attempts within a few percent of each other teach nothing
        drafts = []
        for rank, i in enumerate(order[:k], start=1):
            attempt = attempts[int(i)]
            latency = float(self.latency[i])
            to_median, to_first = median / latency, first_latency / latency
            what = config_text(attempt.params) if self.params else f"attempt {attempt.index}"
            place = "fastest" if rank == 1 else f"number {rank} by speed"
            if int(i) == first:
                first_note = "it is the first one tried"
            else:
                direction = "faster" if to_first >= 1 else "slower"
                ratio = to_first if to_first >= 1 else 1 / to_first
                first_note = (
                    f"{fmt_ratio(ratio)} {direction} than the first valid one tried "
                    f"({fmt_ms(first_latency)})"
                )
            text = (
                f"{self.where}: the {place} of {fmt_count(self.n_valid)} valid "
                f"{'configurations' if self.params else 'attempts'} is {what} at "
                f"{fmt_ms(latency)}, {fmt_ratio(to_median)} faster than the median "
                f"({fmt_ms(median)}); {first_note}."
            )
            hint = {
                "config": dict(attempt.params),
                "latency_ms": latency,
                "ratio_to_median": round(to_median, 4),
                "ratio_to_first": round(to_first, 4),
                "rank": rank,
                "n_valid": self.n_valid,
            }
            drafts.append(self._draft("exemplar", text, hint, attempt.code))
        return drafts

    def _unmeasured_exemplars(self) -> list[LessonDraft]:
        """Tuned configurations without timings: one lesson per trajectory listing the
        configuration chosen for each run of shapes (vLLM tables are one decision, and
        per-shape lessons would be near-identical texts that differ only in numbers)."""
        attempts = [a for a in self.traj.attempts if a.feasible]
        groups: list[tuple[dict[str, Any], list[dict[str, Any]], str | None]] = []
        for attempt in attempts:
            config = {k: v for k, v in attempt.params.items() if k not in self.shape_params}
            shape = {k: attempt.params[k] for k in self.shape_params if k in attempt.params}
            if groups and groups[-1][0] == config and groups[-1][2] == attempt.code:
                groups[-1][1].append(shape)
            else:
                groups.append((config, [shape], attempt.code))
        if not groups:
            return []
        common = max(groups, key=lambda g: len(g[1]))
        parts = [
            f"{_shape_span(shapes)}: {config_text(config)}"
            for config, shapes, _ in groups[:MAX_LISTED_GROUPS]
        ]
        if len(groups) > MAX_LISTED_GROUPS:
            parts.append(f"and {len(groups) - MAX_LISTED_GROUPS} more groups")
        text = (
            f"{self.where}: the tuner's chosen configuration by shape is "
            + "; ".join(parts)
            + " (recorded choices of the tuner; no timings recorded)."
        )
        hint = {
            "config": common[0],
            "by_shape": [{"shapes": shapes, "config": config} for config, shapes, _ in groups],
            "latency_ms": None,
            "ratio_to_median": None,
            "rank": 1,
            "measured": False,
        }
        return [self._draft("exemplar", text, hint, common[2])]

    # -- parameter effects -----------------------------------------------------------------

    def parameter_effects(self) -> list[LessonDraft]:
        if self.n_valid < EFFECT_MIN_VALID or not self.params:
            return []
        valid_idx = np.flatnonzero(self.valid)
        latency = self.latency[valid_idx]
        overall = float(np.median(latency))
        attempts = self.traj.attempts
        found: list[tuple[float, int, str, Any, float, int]] = []
        min_group = max(EFFECT_MIN_GROUP, self.n_valid // 50)
        for p_order, param in enumerate(self.params):
            values = [attempts[i].params.get(param) for i in valid_idx]
            if not all(isinstance(v, int | float | str | bool) for v in values):
                continue
            uniques, codes = np.unique(
                np.array(values, dtype=object).astype(str), return_inverse=True
            )
            if len(uniques) < 2:
                continue
            counts = np.bincount(codes, minlength=len(uniques))
            order = np.argsort(codes, kind="stable")
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            for code in np.flatnonzero((counts >= min_group) & (counts < self.n_valid)):
                members = order[starts[code] : starts[code] + counts[code]]
                speedup = overall / float(np.median(latency[members]))
                if speedup >= EFFECT_MIN_RATIO or speedup <= 1 / EFFECT_MIN_RATIO:
                    value = values[int(members[0])]
                    found.append(
                        (-abs(np.log(speedup)), p_order, param, value, speedup, int(counts[code]))
                    )
        found.sort(key=lambda f: (f[0], f[1], str(f[3])))
        drafts = []
        for _, _, param, value, speedup, count in found[:MAX_EFFECTS]:
            prefer = speedup > 1
            median_value = overall / speedup
            verdict = (
                f"{fmt_ratio(speedup)} faster than the overall median"
                if prefer
                else f"{fmt_ratio(1 / speedup)} slower than the overall median"
            )
            text = (
                f"{self.where}: configurations with {param}={value} have a median latency of "
                f"{fmt_ms(median_value)} over {fmt_count(count)} of {fmt_count(self.n_valid)} "
                f"valid configurations, {verdict} ({fmt_ms(overall)}); "
                f"{'prefer' if prefer else 'avoid'} {param}={value}."
            )
            hint = {
                "param": param,
                "value": value,
                "effect": "prefer" if prefer else "avoid",
                "median_speedup": round(speedup, 4),
                "n_valid": self.n_valid,
                "n_with_value": count,
            }
            drafts.append(self._draft("insight", text, hint))
        return drafts

    # -- failures --------------------------------------------------------------------------

    def failures(self) -> list[LessonDraft]:
        failed = ~self.feasible
        n_failed = int(failed.sum())
        if n_failed == 0:
            return []
        if not self.params:
            return self._code_failures(failed)
        rules = failing_settings(
            self.traj, self.params, failed, FAILURE_MIN_RATE, FAILURE_MIN_GROUP, MAX_FAILURES
        )
        n = len(self.traj.attempts)
        drafts = []
        for rule in rules:
            setting = ", ".join(f"{k}={v}" for k, v in rule.avoid.items())
            shown = rule.example not in (None, rule.error_category)
            example = f": {rule.example}" if shown else ""
            text = (
                f"{self.where}: {fmt_count(rule.n_failed)} of {fmt_count(rule.n)} configurations "
                f"with {setting} failed ({rule.failure_rate:.0%}, mostly {rule.error_category}"
                f"{example}), "
                f"against "
                f"{fmt_count(n_failed)} of {fmt_count(n)} ({n_failed / n:.0%}) over the whole "
                f"space. Avoid {setting}."
            )
            hint = {
                "avoid": rule.avoid,
                "failure_rate": round(rule.failure_rate, 4),
                "error_category": rule.error_category,
                "n": rule.n,
            }
            drafts.append(self._draft("failure", text, hint))
        return drafts

    def _code_failures(self, failed: np.ndarray) -> list[LessonDraft]:
        by_category: dict[str, list[int]] = {}
        for i in np.flatnonzero(failed):
            category = self.traj.attempts[int(i)].error_category or "other"
            by_category.setdefault(category, []).append(int(i))
        n = len(self.traj.attempts)
        drafts = []
        for category in sorted(by_category, key=lambda c: (-len(by_category[c]), c)):
            indices = by_category[category]
            example = self.traj.attempts[indices[0]]
            message = (example.error or "").strip().splitlines()
            excerpt = message[0][:300] if message else "no message recorded"
            text = (
                f"{self.where}: {len(indices)} of {n} attempts failed with a {category} error; "
                f"example: {excerpt}"
            )
            hint = {
                "avoid": {},
                "failure_rate": round(len(indices) / n, 4),
                "error_category": category,
                "n": n,
                "example_error": excerpt,
            }
            drafts.append(self._draft("failure", text, hint, example.code))
        return drafts


def _shape_span(shapes: list[dict[str, Any]]) -> str:
    """ "M=1..16 (5 sizes)" for one numeric shape parameter, else a listing."""
    if not shapes or not shapes[0]:
        return "all recorded shapes"
    if len(shapes[0]) == 1:
        (key,) = shapes[0]
        values = [s[key] for s in shapes]
        if len(values) == 1:
            return f"{key}={values[0]}"
        return (
            f"{key}={values[0]}..{values[-1]} ({len(values)} sizes: {', '.join(map(str, values))})"
        )
    return "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in shapes)
