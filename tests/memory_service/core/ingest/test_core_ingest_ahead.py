"""An ingest embeds its next batch's lessons ahead: each new lesson text once, the store the
same as with one batch, and a rerun embeds nothing (bundled sample data)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from sqlmodel import select

from tunemem.ingest.readers import iter_paths, read_any
from tunemem.memory_service.core.embedding.factory import HashingEmbedder
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Lesson
from tunemem.memory_service.service import MemoryService

SAMPLES = Path(__file__).resolve().parents[4] / "tunemem" / "ingest" / "samples"


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: Counter[str] = Counter()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.embedded.update(texts)
        return super().embed_documents(texts)


def _ingest(data_dir: Path, batch_size: int) -> tuple[MemoryService, CountingEmbedder, object]:
    embedder = CountingEmbedder()
    settings = Settings(
        data_dir=data_dir, index="memory", embedding_cache="off", batch_size=batch_size
    )
    service = MemoryService(settings, embedder=embedder)
    return service, embedder, service.ingest(read_any(list(iter_paths([SAMPLES]))))


def _lessons(service: MemoryService) -> dict[str, str]:
    with service.store.session() as session:
        rows = session.exec(select(Lesson)).all()
        return {r.id: lesson_rows.embedding_text(r.kind, r.text, r.applicability) for r in rows}


def test_ingest_embeds_each_new_lesson_once_and_matches_one_batch(tmp_path: Path) -> None:
    small, counted, summary = _ingest(tmp_path / "small", batch_size=1)
    one, _, whole = _ingest(tmp_path / "one", batch_size=100_000)
    try:
        assert summary.added >= 4 and summary.lessons_added >= 10  # several batches
        assert (summary.added, summary.lessons_added, summary.lessons_merged) == (
            whole.added,
            whole.lessons_added,
            whole.lessons_merged,
        )
        stored = _lessons(small)
        assert stored == _lessons(one)
        assert max(counted.embedded.values()) == 1  # no text embedded twice
        assert set(stored.values()) <= set(counted.embedded)
        for lesson_id, text in stored.items():  # the index holds each lesson's own vector
            hit, score = small.index.query(HashingEmbedder().embed([text])[0], 1, "default")[0]
            assert hit == lesson_id and score > 0.9999
        counted.embedded.clear()
        again = small.ingest(read_any(list(iter_paths([SAMPLES]))))
        assert again.added == 0 and not counted.embedded
    finally:
        small.close()
        one.close()
