"""The performance model's share of a round that the memory's exemplars opened: the batch for
the rest of the round keeps its composition. Latencies are SYNTHETIC (a bowl over BLOCK_M and
BLOCK_N), and the stored runs are partial, as self-fed runs are, so the memory is unsure."""

from __future__ import annotations

import itertools

from tests.memory_service.core.suggest.synthetic_keys import PARAMS, sweep
from tests.memory_service.core.suggest.test_core_model_failures import model_search
from tunemem.search.suggest import SuggestState, config_key, identity

SPACE = {name: tuple(values) for name, values in PARAMS.items()}
VALID = list(itertools.product(*SPACE.values()))


def partial(m: int, every: int = 4):  # type: ignore[no-untyped-def]
    """A tuning run's share of key m's sweep: every fourth configuration (the same quarter of
    the space for every key: the memory measured a quarter of the candidates)."""
    record = sweep(m)
    record.attempts = record.attempts[::every]
    return record


def test_the_rest_of_a_round_the_exemplars_opened_still_explores(make_service) -> None:  # type: ignore[no-untyped-def]
    """Failed before (seen): the model was asked for a batch as large as the round plus what
    was offered already, exploitation first, and the round kept its first picks: with two of
    five slots taken by exemplars the unsure memory's exploring pick was cut off."""
    service = make_service(model_wait_s=60.0)
    service.ingest([partial(m) for m in (1, 2, 4)])
    search = model_search(service, 8)
    state = SuggestState(space=SPACE, stage="draft", lessons=(), observations=(), valid=VALID)
    plain = search(state, 5)
    assert [s.prediction["purpose"] for s in plain].count("explore") >= 1  # type: ignore[index]
    # Two exemplars the model would not have picked (another chip's best, say).
    picked = [s.config for s in plain]
    offered = [c for c in (dict(zip(SPACE, key, strict=True)) for key in VALID) if c not in picked][
        :2
    ]
    opened = SuggestState(space=SPACE, stage="draft", lessons=(), observations=(), valid=VALID)
    opened.offered.update(identity(config_key(SPACE, c)) for c in offered)
    rest = model_search(service, 8)(opened, 3)
    assert len(rest) == 3
    assert all(s.config not in offered for s in rest)
    assert [s.prediction["purpose"] for s in rest].count("explore") == 1  # type: ignore[index]
