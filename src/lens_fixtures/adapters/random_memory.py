"""The random-memory control: every search returns stored episodes drawn at random.

A benchmark is only worth its ability to tell a better memory from a worse one. ``null`` is
the floor for a memory that returns nothing; ``random`` is the floor for one that returns
*something*: any score it earns is what the benchmark hands out for showing the agent
stored text at all. A memory that does not beat it clearly ranks no better than chance.

Searches ignore the query's meaning: the results are a sample, without replacement, of the
episodes stored in the live scope, drawn by a generator seeded from ``(seed, query)``. So the
same search on the same stored episodes always gets the same answer (whatever was read in
between, in whatever scope came before), a different query gets another draw, and
``seed`` (an adapter option: ``--lens-adapter-option random.seed=7``) picks another control.
Results look like :class:`~lens_fixtures.adapters.bm25.BM25Adapter`'s (a short excerpt, a
score that decreases down the list, ``batch_retrieve`` for the full texts), so the only
difference an agent meets is the ranking. The manifest declares ``search_modes=["random"]``:
the conformance suite then holds it to the contract without a relevance floor.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE
from lens_fixtures.adapters.episode_list import EpisodeListMemory
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, SearchResult

__all__ = ["RandomAdapter"]


class RandomAdapter(EpisodeListMemory):
    """Returns ``limit`` stored episodes drawn at random for each search (deterministic per seed and query)."""

    def __init__(self, seed: int = 0, max_results: int = 20, snippet_chars: int = 300) -> None:
        super().__init__(max_results, snippet_chars)
        self._seed = seed
        self._population: list[str] | None = None

    def reset(self, scope_id: str) -> None:
        """Forget every stored episode (one scope is live at a time)."""
        self._episodes.clear()
        self._population = None

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the episode (re-ingesting an id replaces its text)."""
        self._episodes[episode_id] = (timestamp, text)
        self._population = None

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """``limit`` distinct stored episodes in an order drawn from ``(seed, query)``; the query's words are not read."""
        if self._population is None:
            # Sorted ids, not ingestion order: the draw depends only on what is stored, never on how it got there.
            self._population = sorted(self._episodes)
        wanted = min(max(1, min(limit or 10, self._max_results)), len(self._population))
        digest = hashlib.sha256(f"{self._seed}\x1f{query}".encode()).digest()
        drawn = random.Random(int.from_bytes(digest[:8], "big")).sample(self._population, wanted)
        results = []
        for rank, ref_id in enumerate(drawn):
            timestamp, text = self._episodes[ref_id]
            results.append(
                SearchResult(
                    ref_id=ref_id, text=excerpt(text, self._snippet_chars), score=1.0 / (rank + 1), metadata={"timestamp": timestamp}
                )
            )
        return results

    def get_capabilities(self) -> CapabilityManifest:
        """A ``random`` search mode (no relevance promised) and ``batch_retrieve``."""
        return CapabilityManifest(search_modes=["random"], max_results_per_search=self._max_results, extra_tools=[BATCH_RETRIEVE])
