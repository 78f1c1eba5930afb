"""BM25 degraded on a seeded share of its searches: the subject of the statistics benchmarks' A/A runs and known drops.

With probability ``p`` per search (decided by the seed and the query, so one question gets the same decision at every
checkpoint it is asked and a rerun with the same seed answers the same) the search is degraded:

- ``mode="random"``: its results are replaced by random stored episodes (the live scope's, seeded);
- ``mode="top"``: its best result is dropped (the rest move up one place).

Two runs with different seeds and the same ``p`` are statistically identical (an A/A pair); ``p=1`` gives every
question's degraded score, ``p=0`` plain BM25. Used as ``--lens-adapter=LABEL=degraded_at_random:RandomlyDegradedBM25``
with ``benchmarks/`` on ``PYTHONPATH`` and ``--lens-adapter-option=LABEL.p=0.2`` (``.mode``, ``.seed``).
"""

from __future__ import annotations

import random
from typing import Any

from lens_fixtures.adapters.bm25 import BM25Adapter
from pytest_lens import SearchResult

__all__ = ["RandomlyDegradedBM25"]


class RandomlyDegradedBM25(BM25Adapter):
    """:class:`BM25Adapter` whose searches are degraded with probability ``p`` (see the module notes)."""

    def __init__(self, storage_dir: str | None = None, p: float = 0.0, mode: str = "random", seed: int = 0, **options: Any) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must lie in [0, 1], got {p}")
        if mode not in ("random", "top"):
            raise ValueError(f"mode must be 'random' or 'top', got {mode!r}")
        super().__init__(storage_dir, **options)
        self._p, self._mode, self._seed = p, mode, seed
        self._stored: list[str] = []

    def reset(self, scope_id: str) -> None:
        """BM25's reset, and forget the stored ids."""
        super().reset(scope_id)
        self._stored.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """BM25's ingest, remembering the id for random replacements."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        self._stored.append(episode_id)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """BM25's results, or (with probability ``p``) their degraded form."""
        draw = random.Random(f"{self._seed}|{self._mode}|{query}")
        wanted = max(1, min(limit or 10, self._max_results))
        if draw.random() >= self._p:
            return super().search(query, filters, limit)
        if self._mode == "top":
            return super().search(query, filters, wanted + 1)[1 : wanted + 1]
        picks = draw.sample(self._stored, min(wanted, len(self._stored)))
        out = []
        for rank, ref_id in enumerate(picks):
            document = self.retrieve(ref_id)
            out.append(SearchResult(ref_id=ref_id, text="" if document is None else document.text[:400], score=1.0 / (rank + 1)))
        return out
