"""One vector for a whole episode, however long: the mean of its section chunks' vectors.

A sentence-transformers model reads a bounded window (all-MiniLM-L6-v2: 256 word-pieces,
about 120 words of these metric-heavy logs) and silently drops the rest, so embedding a
1,000-word episode as one text represents its first paragraph only. :class:`PooledEmbedder`
splits each text into the same ``###`` section chunks the hybrids embed
(:func:`~lens_fixtures.adapters.chunking.chunk_episode`), each short enough to be read whole,
embeds them through the wrapped (cached) embedder, and returns the normalised mean of the
chunk vectors, each weighted by its number of words: every part of the episode counts, as
much as it is long. Chunk vectors are cached by their text like any other, so a rerun over
unchanged episodes still embeds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lens_fixtures.adapters.chunking import chunk_episode
from pytest_lens.embedding import Embedder, Vectors, normalize_rows

__all__ = ["PooledEmbedder"]


class PooledEmbedder:
    """An :class:`~pytest_lens.embedding.Embedder` giving each text the word-weighted mean of its chunks' vectors.

    A text of one chunk (a short query) gets exactly the wrapped embedder's vector.
    """

    def __init__(self, embedder: Embedder, max_words: int = 100, min_words: int = 60) -> None:
        if max_words < 1 or min_words < 0:
            raise ValueError(f"pooling needs max_words >= 1 and min_words >= 0, got {max_words} and {min_words}")
        self.embedder = embedder
        self.max_words = max_words
        self.min_words = min_words

    @property
    def model_id(self) -> str:
        """The wrapped model and the pooling (pooled vectors differ from the model's own)."""
        return f"{self.embedder.model_id}+mean-of-chunks({self.max_words},{self.min_words})"

    def pieces(self, text: str) -> list[tuple[str, int]]:
        """``(chunk text, words)`` of ``text``; a text with no chunk (blank) is one piece of itself."""
        chunks = chunk_episode(text, self.max_words, self.min_words)
        return [(chunk.text, max(1, chunk.words)) for chunk in chunks] or [(text, 1)]

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One normalised row per text: the word-weighted mean of its chunk vectors (one batched call for all chunks)."""
        pieces = [self.pieces(text) for text in texts]
        flat = [piece for parts in pieces for piece, _ in parts]
        if not flat:
            return self.embedder.encode([])
        vectors = self.embedder.encode(flat)
        pooled = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
        row = 0
        for index, parts in enumerate(pieces):
            weights = np.array([words for _, words in parts], dtype=np.float64)
            pooled[index] = weights @ vectors[row : row + len(parts)] / weights.sum()
            row += len(parts)
        return normalize_rows(pooled)
