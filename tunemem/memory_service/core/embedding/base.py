"""The embedder interface: texts to unit-norm vectors, and the fingerprint of the model that
made them (kinds and the registry: `embedder`)."""

from __future__ import annotations

from abc import ABC, abstractmethod

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
