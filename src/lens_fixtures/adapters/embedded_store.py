"""What the embedding-backed adapters that keep episodes in their own SQLite table share."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.embedding_options import embedding_extras
from lens_fixtures.adapters.storage import stored_document
from pytest_lens import Document, MemoryAdapter

if TYPE_CHECKING:
    from pytest_lens.embedding import CachedEmbedder

__all__ = ["EmbeddedEpisodeStore"]


class EmbeddedEpisodeStore(MemoryAdapter):
    """Base of adapters with an ``episodes`` table in ``_db`` and an ``_embedder``: retrieve, stats, close."""

    _db: sqlite3.Connection
    _embedder: CachedEmbedder
    #: Each instance has its own database and embedder (the embedding cache is shared safely between processes).
    lens_isolated_instances = True

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The extra its embedder needs: the offline model's, or an endpoint's client."""
        return embedding_extras(options)

    def retrieve(self, ref_id: str) -> Document | None:
        """The stored episode text, verbatim."""
        return stored_document(self._db, ref_id)

    def lens_stats(self) -> dict[str, int]:
        """Embedding-cache hits and misses, and encoding time, since construction."""
        return self._embedder.stats.as_counters()

    def close(self) -> None:
        """Close the database and the cache."""
        self._db.close()
        self._embedder.close()
