"""Per-request shrinkage strength: RetrieveOptions.kappa reaches the ranking settings."""

from __future__ import annotations

import pytest

from tunemem.retrieval.values import ScopeStats, value_estimate

pytest.importorskip("tunemem.memory_service.core.settings")
from tunemem.memory_service.core.schemas.learning import RetrieveOptions
from tunemem.memory_service.core.settings import Settings  # noqa: E402


def test_kappa_option_overrides_the_service_default() -> None:
    settings = Settings(kappa=2.0)
    options = RetrieveOptions(kappa=0.5)
    assert settings.ranking(k=3, **options.model_dump(exclude_none=True)).kappa == 0.5
    assert settings.ranking(k=3, **RetrieveOptions().model_dump(exclude_none=True)).kappa == 2.0


def test_kappa_option_rejects_negative_strength() -> None:
    with pytest.raises(ValueError):
        RetrieveOptions(kappa=-1.0)


def test_smaller_kappa_lets_a_specific_scope_take_over_sooner() -> None:
    chain = ["chip:a4000", "family:nvidia-ampere", "backend:cuda", "global"]
    stats = {"family:nvidia-ampere": ScopeStats(n=1, q=-0.8), "global": ScopeStats(n=4, q=0.6)}
    strong = value_estimate(chain, stats, q0=0.0, kappa=2.0)
    weak = value_estimate(chain, stats, q0=0.0, kappa=0.5)
    # Global: 4*0.6/(4+k); family: (1*(-0.8) + k*V_global)/(1+k).
    assert strong.value == pytest.approx((-0.8 + 2 * (2.4 / 6)) / 3)
    assert weak.value == pytest.approx((-0.8 + 0.5 * (2.4 / 4.5)) / 1.5)
    assert weak.value < strong.value
