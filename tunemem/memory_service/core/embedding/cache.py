"""Lesson embeddings kept on disk by content hash, across runs and stores.

Embedding is most of an ingest's cost with the default model (about 15 ms a lesson text on
two cores); the same text embedded again (a re-ingest into a fresh store, a reindex, a bundle
import) is read back instead. Entries are keyed by the embedder's fingerprint (model and
weights) and the SHA-256 of the text, and hold the float32 bytes, so a cached vector is
bit-identical to a computed one. The file is SQLite (WAL), safe for several processes.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

from tunemem.memory_service.core.embedding.factory import Embedder

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embedding (model TEXT NOT NULL, key TEXT NOT NULL, "
    "vector BLOB NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID"
)
_CHUNK = 500  # keys per SELECT, below SQLite's bound-parameter limit


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model fingerprint, text hash) in one SQLite file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(
            str(path), check_same_thread=False, timeout=30, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()

    def get(self, model: str, keys: list[str], dim: int) -> dict[str, np.ndarray]:
        """The cached vectors among `keys` (those with the expected dimension)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), _CHUNK):
                part = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(part))
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM embedding WHERE model = ? AND key IN ({marks})",
                    [model, *part],
                ):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dim,):
                        found[key] = vector
        return found

    def put(self, model: str, keys: list[str], vectors: np.ndarray) -> None:
        rows = [
            (model, key, np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for key, v in zip(keys, vectors, strict=True)
        ]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO embedding VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM embedding").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class DiskCachedEmbedder(Embedder):
    """An embedder whose document embeddings go through an `EmbeddingCache`; queries do not
    (a fresh query is embedded once, and writing it to disk would cost more than it saves)."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache):
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.dim = inner.dim
        self.hits = 0
        self.misses = 0

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.fingerprint
        keys = [text_key(t) for t in texts]
        found = self.cache.get(model, keys, self.dim)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            vectors = self.inner.embed_documents([text_of[k] for k in missing])
            self.cache.put(model, missing, vectors)
            found.update(zip(missing, vectors, strict=True))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
