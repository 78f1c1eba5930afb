"""One vector per episode and cosine search: the LENS paper's mem0-raw analogue, without mem0.

The paper's mem0-raw embedded each whole episode with a long-context model. MiniLM reads
256 word-pieces (about the first 120 words of a ~1,000-word episode) and drops the rest, so
embedding the episode as one text would represent its first paragraph only. By default the
vector is therefore the word-weighted mean of the episode's section-chunk vectors
(:class:`~lens_fixtures.adapters.pooling.PooledEmbedder`): one vector for the whole episode,
as a long-context embedder gives, with a detail deep in a long episode diluted, not cut off:
the weakness the paper describes for full-episode vectors. ``pooling="none"`` embeds the
text as one (truncated) input, as earlier versions did. ``pooling="max"`` keeps one vector per
section chunk and scores an episode by its best chunk (late interaction, the dense retrieval that
beats mean-pooled session vectors on LoCoMo by 13 to 24 points of Hit@1 across six encoders in
Lysenstøen 2026, arXiv 2606.04194): sqlite-hybrid's dense leg, alone.
"""

from __future__ import annotations

from typing import Any

from lens_fixtures.adapters.chunk_index import DEFAULT_EMBED_QUEUE, ChunkIndex, date_bounds
from lens_fixtures.adapters.chunking import chunk_episode
from lens_fixtures.adapters.embedded_store import EmbeddedEpisodeStore
from lens_fixtures.adapters.embedding_options import embedder_from_options
from lens_fixtures.adapters.pooling import PooledEmbedder
from lens_fixtures.adapters.snippets import excerpt
from lens_fixtures.adapters.storage import create_episodes, scratch_database, store_episode
from pytest_lens import CapabilityManifest, SearchResult
from pytest_lens.embedding import Embedder

__all__ = ["POOLING", "EmbeddingAdapter"]

#: How an episode is scored: by the mean of its chunks' vectors, by the (truncated) episode as one input, or by its best chunk.
POOLING = ("mean", "none", "max")


class EmbeddingAdapter(EmbeddedEpisodeStore):
    """Episodes in SQLite, one normalised vector each (in memory and in SQLite), cosine-ranked.

    Options: ``embedding_model`` (a local sentence-transformers model; default the
    bundled MiniLM), ``embedding_base_url`` (an OpenAI-compatible endpoint instead),
    ``embedding_batch_size``, ``cache`` / ``cache_dir`` (the shared embedding cache),
    ``pooling`` (``mean``: the word-weighted mean of the episode's section chunks, at most
    ``max_chunk_words`` (100) words each, sections under ``min_chunk_words`` (60) joining the next;
    ``none``: the episode as one input, truncated by the model; ``max``: every section chunk its own
    vector, the episode scored by its best one), ``snippet_chars`` (length of a
    search result's excerpt), ``max_results``, ``embed_queue`` (32: section chunks queued before they are
    embedded, which bounds the work of one ``ingest`` call).
    """

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        pooling: str = "mean",
        max_chunk_words: int = 100,
        min_chunk_words: int = 60,
        snippet_chars: int = 500,
        max_results: int = 20,
        embed_queue: int = DEFAULT_EMBED_QUEUE,
    ) -> None:
        if pooling not in POOLING:
            raise ValueError(f"option pooling must be one of {', '.join(POOLING)}, got {pooling!r}")
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        self._db = scratch_database(storage_dir, "embedding")
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._create()
        self._pooling = pooling
        self._chunk_words = (max_chunk_words, min_chunk_words)
        episode_embedder = PooledEmbedder(self._embedder, max_chunk_words, min_chunk_words) if pooling == "mean" else self._embedder
        # The queue counts what the model encodes: a pooled episode costs one input per section chunk (a 5,000-word
        # V2 episode about 50), so one call embeds its own episode plus fewer than ``embed_queue`` chunks queued.
        inputs = (lambda text: len(episode_embedder.pieces(text))) if isinstance(episode_embedder, PooledEmbedder) else None
        self._index = ChunkIndex(self._db, episode_embedder, table="episode_vectors", flush_at=embed_queue, inputs=inputs)

    def _create(self) -> None:
        create_episodes(self._db)

    def reset(self, scope_id: str) -> None:
        """Drop every stored episode and vector."""
        self._create()
        self._index.reset()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the episode; its vector is computed in the next batch (before any search)."""
        with self._db:
            store_episode(self._db, episode_id, scope_id, timestamp, text, meta)
        if self._pooling == "max":
            pieces = [chunk.text for chunk in chunk_episode(text, *self._chunk_words)]
        else:
            pieces = [text] if text.strip() else []
        self._index.add(episode_id, timestamp, pieces)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Embed whatever is still queued."""
        self._index.flush()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Episodes by cosine similarity of their vector to the query's; ``start_date``/``end_date`` filter."""
        if not query.strip():
            return []
        limit = max(1, min(limit or 10, self._max_results))
        similarities = self._index.similarities(self._index.query_vector(query))
        mask = self._index.live_rows(*date_bounds(filters))
        results = []
        # One hit per episode, at its best row: with one row an episode (mean, none) that row, with chunks (max) its best chunk.
        for hit in self._index.rank_episodes(similarities, limit, mask):
            results.append(
                SearchResult(
                    ref_id=hit.ref_id,
                    text=excerpt(self._index.text(hit.row), self._snippet_chars),
                    score=round(hit.score, 6),
                    metadata={"timestamp": hit.timestamp},
                )
            )
        return results

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search with a date range; no extra tools (like mem0-raw in the paper)."""
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=True)
