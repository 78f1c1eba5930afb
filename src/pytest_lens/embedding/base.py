"""The embedder interface every embedding-backed reference adapter uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = ["Embedder", "Vectors", "normalize_rows"]

#: A ``(n, dimension)`` float32 matrix, one L2-normalised row per text.
Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``model_id`` names the model so precisely that equal ids give equal vectors:
    the embedding cache keys on it.
    """

    @property
    def model_id(self) -> str:
        """Stable identity of the model (cache key part)."""
        ...

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One normalised row per text, in order; ``texts`` may be long (implementations batch)."""
        ...


def normalize_rows(matrix: NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (all-zero rows stay zero), as float32."""
    vectors = np.asarray(matrix, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(f"expected a 2-d matrix of embeddings, got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
