"""The transfer audit's advice follows its own counts: what an n/a correlation lacks."""

from __future__ import annotations

from tunemem.memory_service.core.schemas.audit import (
    LessonPairValuePublic,
    TransferAuditPublic,
    TransferPairPublic,
)
from tunemem.memory_service.http.audit_html import fill_advice


def _audit(n_common: int, stage: str = "draft") -> TransferAuditPublic:
    common = [
        LessonPairValuePublic(lesson_id=f"l{i}", source_q=0.3, source_n=1, target_q=0.3, target_n=1)
        for i in range(n_common)
    ]
    pair = TransferPairPublic(
        source="mi250x",
        target="w6600",
        n_common=n_common,
        spearman=None,
        sign_agreement=1.0 if n_common else None,
        mean_source=None,
        mean_target=None,
        common=common,
        helped_source_hurt_target=[],
        helped_both=[],
        optimum=None,
    )
    return TransferAuditPublic(
        level="chip",
        stage=stage,
        op=None,
        scopes=["mi250x", "w6600"],
        neutral=0.0,
        min_n=1,
        pairs=[pair],
        lessons={},
    )


def test_advice_names_what_the_correlation_lacks() -> None:
    none = " ".join(fill_advice(_audit(0)))
    assert "no lesson has outcomes on two chips" in none
    one = " ".join(fill_advice(_audit(1)))
    assert "no lesson has outcomes" not in one and "shares is one" in one
    tied = " ".join(fill_advice(_audit(3)))
    assert "no lesson has outcomes" not in tied and "up to 3 lessons" in tied
    assert "--stage refine" in tied
    assert "--stage refine" not in " ".join(fill_advice(_audit(3, stage="refine")))


def test_advice_commands_are_spelled_as_the_docs_spell_them() -> None:
    for n in (0, 1, 3):
        for line in fill_advice(_audit(n)):
            assert "`tunemem " not in line  # one spelling: .venv/bin/tunemem
            if "agent run" in line or "ingest " in line:
                assert "--url URL" in line
