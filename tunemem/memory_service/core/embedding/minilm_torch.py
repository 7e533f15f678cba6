"""all-MiniLM-L6-v2 on PyTorch (embedder kind `minilm-torch`): the reference the ONNX Runtime
embedder (`minilm_onnx`, the default) is tested against, and the embedder of stores made
before it. Imports PyTorch and sentence-transformers when built, never before."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from tunemem.memory_service.core.embedding.passes import (
    Features,
    PassEmbedder,
    bundled_model_path,
    weights_digest,
)


class MiniLMTorchEmbedder(PassEmbedder):
    """all-MiniLM-L6-v2 through sentence-transformers on PyTorch, never padded (`PassEmbedder`).

    Torch's thread count is per calling thread (OpenMP's and MKL's), so each pass sets it.
    """

    def __init__(self, model_path: Path | None = None, threads: int = 0, workers: int = 0):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from sentence_transformers import SentenceTransformer

        path = Path(model_path or bundled_model_path())
        if not path.exists():
            raise FileNotFoundError(f"embedding model folder not found: {path}")
        super().__init__(threads, workers)
        self._torch = torch
        self._model = SentenceTransformer(str(path), device="cpu")
        self._model.eval()
        self._prepare = getattr(self._model, "preprocess", None) or self._model.tokenize
        # The fast tokenizer's Rust state must not be entered by two threads at once.
        self._tokenizer_lock = threading.Lock()
        self._fingerprint = f"{self.name}:{self.dim}:{weights_digest(path)}"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def _features(self, text: str) -> Features:
        with self._tokenizer_lock:
            return dict(self._prepare([text]))

    def _stack(self, features: list[Features]) -> Features:
        first = features[0]
        return {
            key: self._torch.cat([f[key] for f in features])
            if self._torch.is_tensor(value)
            else value
            for key, value in first.items()
        }

    def _run(self, features: Features, threads: int) -> np.ndarray:
        # Per calling thread (OpenMP's and MKL's thread counts are thread-local).
        self._torch.set_num_threads(threads)
        with self._torch.inference_mode():
            pooled = self._model.forward(features)["sentence_embedding"]
            unit = self._torch.nn.functional.normalize(pooled, p=2, dim=1)
        return unit.numpy().astype(np.float32, copy=False)
