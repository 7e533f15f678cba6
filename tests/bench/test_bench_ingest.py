"""Ingest benchmark on the bundled sample data: cold and warm embedding cache, files written.

No rate is asserted; the numbers come from `tunemem bench ingest`.
"""

from __future__ import annotations

import json
from pathlib import Path

from tunemem.bench.ingest.run import run_ingest_bench
from tunemem.ingest.samples import sample_paths


def test_warm_run_reads_every_lesson_embedding_from_the_cold_runs_cache(tmp_path: Path) -> None:
    data = Path(sample_paths()[0]).parent
    result = run_ingest_bench(data, tmp_path, "memory", ["hashing"])
    cold, warm = result["runs"]
    assert (cold["cache"], warm["cache"]) == ("cold", "warm")
    assert cold["lessons_added"] == warm["lessons_added"] > 0
    assert cold["attempts"] == warm["attempts"] > 0
    assert cold["cache_hits"] < warm["cache_hits"]
    assert warm["cache_hits"] >= warm["lessons_added"]
    assert cold["rerun_added"] == warm["rerun_added"] == 0
    saved = json.loads((tmp_path / "ingest.json").read_text())
    assert saved["runs"] == result["runs"]
    assert "| hashing | warm (" in (tmp_path / "ingest.md").read_text()
