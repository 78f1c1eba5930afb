"""A vector memory on pytest-lens's public embedding API (``pytest_lens.embedding``).

It uses the same offline model and on-disk cache as the reference adapters, so it embeds nothing a previous
run (or another adapter) already embedded.

    pytest -m lens --lens-adapter=examples.vector_memory:VectorMemory --lens-adapter=embedding

A real adapter would put the vectors in its vector database where this one keeps a numpy matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.api import default_embedder


class VectorMemory(MemoryAdapter):
    """One vector per episode, cosine similarity; episodes are embedded in one batch per checkpoint."""

    max_results = 10

    def __init__(self, cache_dir: str | None = None, snippet_chars: int = 300) -> None:
        # Expensive resources (models, clients, connections) are made once here, not per call:
        # the adapter lives for the whole session (per xdist worker); the model itself loads lazily.
        self.embedder = default_embedder(cache_dir=cache_dir)
        self.snippet_chars = snippet_chars
        self.texts: dict[str, str] = {}
        self.ids: list[str] = []
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.pending: list[str] = []

    def reset(self, scope_id: str) -> None:
        self.texts.clear()
        self.ids, self.pending = [], []
        self.vectors = np.zeros((0, 0), dtype=np.float32)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        if episode_id not in self.pending:
            self.pending.append(episode_id)
        self.texts[episode_id] = text

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        self._embed_pending()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        self._embed_pending()
        if not self.ids:
            return []
        scores = self.vectors @ self.embedder.encode([query])[0]
        ranked = sorted(zip(scores.tolist(), self.ids, strict=True), key=lambda pair: (-pair[0], pair[1]))
        count = min(limit or self.max_results, self.max_results)
        return [SearchResult(ref, self.texts[ref][: self.snippet_chars], float(score)) for score, ref in ranked[:count]]

    def retrieve(self, ref_id: str) -> Document | None:
        text = self.texts.get(ref_id)
        return None if text is None else Document(ref_id, text)

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=self.max_results)

    def lens_stats(self) -> dict[str, int]:
        # Cache hits and misses and encoding time appear under "adapter counters" in the LENS summary.
        return self.embedder.stats.as_counters()

    def close(self) -> None:
        self.embedder.close()

    def _embed_pending(self) -> None:
        if not self.pending:
            return
        fresh = self.embedder.encode([self.texts[ref] for ref in self.pending])
        rows = {ref: row for row, ref in enumerate(self.ids)}
        new = [index for index, ref in enumerate(self.pending) if ref not in rows]
        if self.ids:
            for index, ref in enumerate(self.pending):
                if ref in rows:  # an id ingested again: its new text replaces the old vector
                    self.vectors[rows[ref]] = fresh[index]
            self.vectors = np.vstack([self.vectors, fresh[new]])
        else:
            self.vectors = fresh[new]
        self.ids.extend(self.pending[index] for index in new)
        self.pending = []
