"""The model's confidence in a key knows what the memory has not seen: a memory that measured
every configuration, but only at small keys, is not sure of a key far beyond them. Latencies
are SYNTHETIC (a bowl whose optimum moves with the key)."""

from __future__ import annotations

from tests.memory_service.core.suggest.synthetic_keys import PARAMS, latency, sweep

STORED = (1, 2, 4, 8)
SURE = 0.7  # the Triton drop-in's default `RoundPolicy.sure`


def suggest(service, m: int, tried_like: int):  # type: ignore[no-untyped-def]
    """Model suggestions for key m after five timings that behave as key `tried_like` does."""
    from tunemem.memory_service.core.schemas.learning import ContextIn, TaskIn
    from tunemem.memory_service.core.schemas.suggest import ObservationIn, SpaceIn, SuggestRequest

    tried = [(16, 64, 4), (32, 64, 4), (64, 64, 4), (128, 64, 4), (256, 64, 4)]
    request = SuggestRequest(
        task=TaskIn(op="synthetic_gemm", signature={"M": m, "N": 4096, "dtype": "float16"}),
        context=ContextIn(chip="NVIDIA H200", backend="cuda"),
        space=SpaceIn(params=PARAMS),
        observations=[
            ObservationIn(
                config=dict(zip(PARAMS, c, strict=True)), latency_ms=latency(tried_like, *c)
            )
            for c in tried
        ],
        k=4,
        seed=0,
    )
    out = [s.prediction for s in service.suggest(request).suggestions if s.source == "model"]
    assert out, "the model answered nothing"
    return out


def test_a_key_far_beyond_every_stored_one_is_not_one_the_memory_is_sure_of(make_service) -> None:  # type: ignore[no-untyped-def]
    """Failed before the reach: every configuration measured made the memory sure (0.9+) of
    M = 4096, met after keys up to M = 8, when the run's few timings ranked as it predicted."""
    service = make_service(model_wait_s=60.0)
    service.ingest([sweep(m) for m in STORED])
    for p in suggest(service, 4096, tried_like=8):
        assert p["confidence"] < SURE
        assert p["key_reach"] == 0.0  # no two stored keys 9 doublings apart


def test_a_stored_key_keeps_the_confidence_of_the_run(make_service) -> None:  # type: ignore[no-untyped-def]
    service = make_service(model_wait_s=60.0)
    service.ingest([sweep(m) for m in STORED])
    for p in suggest(service, 8, tried_like=8):
        assert p["key_reach"] == 1.0
        assert p["confidence"] >= SURE


def test_a_key_next_to_the_stored_ones_reaches_as_far_as_they_carried(make_service) -> None:  # type: ignore[no-untyped-def]
    service = make_service(model_wait_s=60.0)
    service.ingest([sweep(m) for m in STORED])
    near = suggest(service, 16, tried_like=16)[0]["key_reach"]
    far = suggest(service, 64, tried_like=64)[0]["key_reach"]
    assert 0.0 < far < near < 1.0
