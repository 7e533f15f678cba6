"""The values and rankings every door shows, pinned on one SYNTHETIC memory (invented times).

The memory exercises every term of the generalised value at once: recorded reaches on two
chips, recorded effects of parameter-setting lessons, own and neighbour outcomes, a source
prior, claims that fail to reproduce (claim trust) and outcomes under a superseded toolchain
(discounts and undiscounted values). The retrieves (chain and generalised, with and without a
toolchain and claim trust), the reports' answers and the value-sorted listing are compared,
order and numbers, with `value_pin.json`: a change to how values are computed shows here.
Regenerate the file only for a change meant to move values: `TUNEMEM_WRITE_VALUE_PIN=1`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate, LessonFilter
from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

PIN = Path(__file__).with_name("value_pin.json")
KEYS = ["bx", "tx"]
SIGNATURE = {"problem_size": [256], "tune_params_keys": KEYS}
OLD = {"triton": "3.6.0", "torch": "2.11.0+cu130", "cuda": "13.0"}
NEW = {"triton": "3.7.0", "torch": "2.11.0+cu130", "cuda": "13.0"}
# (values, toolchain, claim power) of the pinned retrieves; the chain has no claim term
RETRIEVES = [
    ("chain", "none", 0.0),
    ("chain", "old", 0.0),
    ("chain", "new", 0.0),
    ("generalised", "none", 0.0),
    ("generalised", "none", 2.0),
    ("generalised", "old", 2.0),
    ("generalised", "new", 0.0),
    ("generalised", "new", 2.0),
]


def _trajectory(chip: str, best_bx: int, source: str, scale: float = 1.0) -> TrajectoryRecord:
    attempts = []
    for bx in (16, 32, 64, 128):
        for tx in (1, 2, 4):
            latency = scale * (1.0 + abs(bx - best_bx) / 16 + 0.1 * tx)
            attempts.append(AttemptRecord(len(attempts), {"bx": bx, "tx": tx}, latency_ms=latency))
    return TrajectoryRecord(
        source_format="native",
        source=source,
        task=TaskSpec("synthconv", signature=SIGNATURE),
        context=ContextSpec(chip, "cuda"),
        attempts=attempts,
        synthetic=True,
    )


def _setting(param: str, value: int, effect: str, chip: str) -> LessonCreate:
    return LessonCreate(
        kind="insight",
        text=f"synthconv on {chip}: {effect} {param}={value}",
        hint={"param": param, "value": value, "effect": effect},
        applicability={"op": "synthconv", "chips": [chip], "backends": ["cuda"]},
    )


def _retrieve(service, chip: str, values: str, toolchain=None, claim_power: float = 0.0):
    context: dict[str, Any] = {"chip": chip, "backend": "cuda"}
    if toolchain:
        context["toolchain"] = toolchain
    return service.retrieve(
        RetrieveRequest(
            query="tune synthconv block size",
            task={"op": "synthconv", "signature": SIGNATURE},
            context=context,
            stage="draft",
            k=40,
            options={"values": values, "k_recall": 80, "claim_power": claim_power},
        )
    )


def _name(lesson) -> str:
    """A lesson by what it says, not by its id (ids are drawn anew in every memory)."""
    return f"{lesson.text} {json.dumps(lesson.hint, sort_keys=True)}"


def _report(service, chip: str, lesson_names: list[str], latency: float, toolchain=None):
    retrieval = _retrieve(service, chip, "generalised", toolchain)
    ids = {_name(x): x.id for x in retrieval.lessons}
    answer = service.report(
        ReportRequest(
            retrieval_id=retrieval.retrieval_id,
            used=[ids[n] for n in lesson_names],
            outcome=OutcomeIn(compiled=True, correct=True, latency_ms=latency),
        )
    )
    names = {lid: n for n, lid in ids.items()}
    return {names[lid]: value.model_dump() for lid, value in sorted(answer.values.items())}


def _ranking(response) -> list[dict[str, Any]]:
    return [
        {
            "lesson": _name(x),
            "score": x.score,
            "stale": x.stale,
            "breakdown": x.breakdown.model_dump(mode="json"),
        }
        for x in response.lessons
    ]


def _memory_values(service) -> dict[str, Any]:
    service.ingest(
        [
            _trajectory("a100", 64, "synthetic/a100"),
            _trajectory("a4000", 128, "synthetic/a4000", scale=0.5),  # claims fast times
        ]
    )
    service.add_lessons(
        [
            _setting("bx", 128, "prefer", "a100"),
            _setting("bx", 16, "avoid", "a4000"),
            _setting("tx", 4, "prefer", "a100"),
        ]
    )
    config = [_name(x) for x in _retrieve(service, "a4000", "generalised").lessons]
    config = sorted(n for n in config if '"config"' in n)
    out: dict[str, Any] = {"reports": []}
    # Outcomes on the target under the superseded toolchain, slower than claimed.
    out["reports"].append(_report(service, "a4000", config[:2], 3.0, OLD))
    out["reports"].append(_report(service, "a4000", config[2:3], 2.5, OLD))
    # Neighbour outcomes, one under the current toolchain.
    out["reports"].append(_report(service, "rtx-3090", config[:1], 1.2))
    out["reports"].append(_report(service, "rtx-3090", config[1:3], 1.8, NEW))
    out["reports"].append(_report(service, "a4000", config[3:4], 1.1, NEW))
    toolchains = {"old": OLD, "new": NEW, "none": None}
    out["retrieves"] = {
        f"{chip} {values} {tool} {power}": _ranking(
            _retrieve(service, chip, values, toolchains[tool], power)
        )
        for chip in ("a4000", "rtx-3090")
        for values, tool, power in RETRIEVES
    }
    listing = service.list_lessons(LessonFilter(sort="value", chip="a4000", stage="draft"))
    out["listing"] = [
        {"lesson": f"{x.text} {json.dumps(x.hint, sort_keys=True)}", **x.value.model_dump()}
        for x in listing.data
        if x.value is not None
    ]
    return out


def _close(pinned: Any, now: Any, where: str) -> None:
    if isinstance(pinned, float) or isinstance(now, float):
        assert abs(pinned - now) <= 1e-12 * max(1.0, abs(pinned)), f"{where}: {pinned} != {now}"
    elif isinstance(pinned, dict):
        assert isinstance(now, dict) and set(pinned) == set(now), f"{where}: keys differ"
        for key in pinned:
            _close(pinned[key], now[key], f"{where}.{key}")
    elif isinstance(pinned, list):
        assert isinstance(now, list) and len(pinned) == len(now), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(pinned, now, strict=True)):
            _close(a, b, f"{where}[{i}]")
    else:
        assert pinned == now, f"{where}: {pinned!r} != {now!r}"


def _lines(pin: dict[str, Any]) -> str:
    """The pin as JSON with one line per lesson, so that a moved value reads as a one-line diff."""

    def rows(items: list[Any]) -> str:
        return "[\n" + ",\n".join(json.dumps(x, sort_keys=True) for x in items) + "\n]"

    retrieves = ",\n".join(f"{json.dumps(k)}: {rows(v)}" for k, v in pin["retrieves"].items())
    return (
        f'{{"listing": {rows(pin["listing"])},\n"reports": {rows(pin["reports"])},\n'
        f'"retrieves": {{\n{retrieves}\n}}}}\n'
    )


def test_values_and_rankings_are_as_pinned(make_service) -> None:
    now = json.loads(json.dumps(_memory_values(make_service(index="memory"))))
    if os.environ.get("TUNEMEM_WRITE_VALUE_PIN") == "1":
        PIN.write_text(_lines(now))
    pinned = json.loads(PIN.read_text())
    # the memory exercises every term: each kind appears in some generalised breakdown
    terms = {
        name.split(":")[0]
        for ranking in now["retrieves"].values()
        for lesson in ranking
        for name in lesson["breakdown"]["value_terms"]
    }
    assert {"prior", "chip", "outcomes", "recorded", "effect", "source"} <= terms
    trusts = [x["breakdown"]["claim_trust"] for r in now["retrieves"].values() for x in r]
    assert any(trusts)
    assert any(
        x["breakdown"]["toolchain"] and x["breakdown"]["toolchain"]["undiscounted_value"]
        for r in now["retrieves"].values()
        for x in r
    )
    _close(pinned, now, "pin")
