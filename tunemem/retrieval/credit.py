"""Credit that follows the advice (DESIGN section 4, "beyond them").

EvoKernel and MemRL credit at retrieval level: every lesson the client says it used receives
the attempt's stage reward. Where the report carries the attempt's configuration, each used
lesson is judged by whether the attempt followed it, from its hint:

- an exemplar (`config`) or a "prefer" setting (`param`, `value`): followed when the attempt
  carries its settings, and then credited with the stage reward; not followed, it earns nothing
  from this outcome (no update);
- an avoid-lesson (a failure's `avoid` settings, or an "avoid" setting): when the attempt
  carried every setting it warns against, the outcome tests the warning. Feasible (and, for a
  lesson that warns of slowness, at least as fast as the best before) contradicts it: the
  lesson was wrong in this context and receives REWARD_MIN. Infeasible (or, for slowness,
  slower) confirms it: REWARD_MAX. When the attempt kept away from the settings, the lesson
  was followed and receives the stage reward;
- a lesson whose hint names no settings, or settings the configuration does not mention, or a
  report without a configuration: the stage reward, as before.

Pure: plain data in, a verdict and a reward out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from tunemem.retrieval.rewards import REWARD_MAX, REWARD_MIN

Verdict = Literal["followed", "not_followed", "contradicted", "confirmed", "untested", "unknown"]
VERDICTS: tuple[Verdict, ...] = (
    "followed",
    "not_followed",
    "contradicted",
    "confirmed",
    "untested",
    "unknown",
)


def _same(a: Any, b: Any) -> bool:
    # JSON round trips turn 1 into 1.0 or "1"; compare as the hint and the report wrote them.
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return str(a) == str(b)


def _carries(config: Mapping[str, Any], settings: Mapping[str, Any]) -> bool | None:
    """Whether the configuration sets every one of `settings` (None: it does not mention one)."""
    if not settings or any(k not in config for k in settings):
        return None
    return all(_same(config[k], v) for k, v in settings.items())


def avoided_settings(kind: str, hint: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings an avoid-lesson warns against ({} for any other lesson)."""
    hint = hint or {}
    avoid = hint.get("avoid")
    if kind == "failure" and isinstance(avoid, Mapping):
        return dict(avoid)
    if hint.get("effect") == "avoid" and "param" in hint and "value" in hint:
        return {str(hint["param"]): hint["value"]}
    return {}


def verdict(
    kind: str,
    hint: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    feasible: bool,
    fast: bool | None,
) -> Verdict:
    """How the attempt with `config` stood to one lesson's advice.

    Args:
        kind: the lesson's kind (exemplar, insight, failure).
        hint: the lesson's structured hint.
        config: the attempt's configuration; None when the report did not say.
        feasible: compiled, correct and not rejected.
        fast: at least as fast as the best before the attempt (None: not known).
    """
    if config is None or not hint:
        return "unknown"
    avoided = avoided_settings(kind, hint)
    if avoided:
        carried = _carries(config, avoided)
        if carried is None:
            return "unknown"
        if not carried:
            return "followed"
        if kind == "failure":  # it warns that the settings fail
            return "contradicted" if feasible else "confirmed"
        if not feasible or fast is False:  # it warns that they are slow
            return "confirmed"
        return "contradicted" if fast else "untested"
    exemplar = hint.get("config")
    if isinstance(exemplar, Mapping):
        shared = {k: v for k, v in exemplar.items() if k in config}
        carried = _carries(config, shared)
    elif "param" in hint and "value" in hint and hint.get("effect", "prefer") == "prefer":
        carried = _carries(config, {str(hint["param"]): hint["value"]})
    else:
        return "unknown"
    if carried is None:
        return "unknown"
    return "followed" if carried else "not_followed"


def lesson_reward(which: str, reward: float) -> float | None:
    """The reward one lesson receives under its verdict (None: no update; a verdict this
    version does not know counts as unknown)."""
    if which in ("not_followed", "untested"):
        return None
    if which == "contradicted":
        return REWARD_MIN
    if which == "confirmed":
        return REWARD_MAX
    return reward


def lesson_rewards(
    lessons: Iterable[str], verdicts: Mapping[str, str], reward: float
) -> dict[str, float]:
    """Each used lesson's reward under its verdict (absent: unknown); no update left out."""
    out: dict[str, float] = {}
    for lesson_id in lessons:
        given = lesson_reward(verdicts.get(lesson_id, "unknown"), reward)
        if given is not None:
            out[lesson_id] = given
    return out
