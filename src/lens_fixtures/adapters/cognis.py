"""Cognis-style hybrid retrieval (Cognis paper §5), offline and without its LLM extraction.

What is kept from the paper's retrieval pipeline, in order:

1. two-stage vector search (§5.2): a shortlist of ``shortlist_size`` chunks by the
   first ``shortlist_dim`` dimensions (renormalised), reranked with the full vectors.
   Cognis uses Matryoshka embeddings (256-d shortlist, 768-d rerank); MiniLM is
   384-d and not Matryoshka-trained, so the defaults are a 128-d shortlist of 200
   and a 384-d rerank: the truncated shortlist is coarser than Cognis's, the rerank exact;
2. BM25 over the same chunks (SQLite FTS5 standing in for OpenSearch, §5.3);
3. weighted reciprocal rank fusion (§5.4): ``0.7 * (k+1)/(k + rank_vector) + 0.3 * (k+1)/(k + rank_bm25)``,
   k=10, over the whole reranked shortlist and as many BM25 hits; a chunk missing from one ranking takes
   rank ``shortlist_size + 1`` there. Cognis first drops vector candidates under cosine 0.3, a threshold
   calibrated for its Gemini embeddings; MiniLM's cosines run much lower (a clear paraphrase such as "vehicle
   ignition failure" / "the van refused to start ... battery had died" scores 0.29, a query that is one rare
   exact token often under 0.1), so here the threshold is off by default (``similarity_threshold``);
4. temporal boost (§5.5) for queries with a temporal reference: ``0.6 * fused + 0.4 * temporal_score``;
5. near-duplicate removal (§5.6): one result per episode, and a result whose chunk is >= 0.99
   cosine-similar to a better one is dropped.

Not reproduced: LLM fact extraction and version chains (§4, they need an LLM), the BGE-2
cross-encoder (§5.7, no offline reranker weights are available) and the open-source
code's wall-clock recency boost (meaningless for a replayed stream). The memory units are
the episodes' section chunks (:func:`chunk_episode`), with the episode's id as ``ref_id``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lens_fixtures.adapters.bm25 import fts_query
from lens_fixtures.adapters.chunk_index import DEFAULT_EMBED_QUEUE, ChunkIndex, date_bounds
from lens_fixtures.adapters.chunking import chunk_episode
from lens_fixtures.adapters.embedded_store import EmbeddedEpisodeStore
from lens_fixtures.adapters.embedding_options import embedder_from_options
from lens_fixtures.adapters.fusion import reciprocal_rank_fusion
from lens_fixtures.adapters.snippets import excerpt
from lens_fixtures.adapters.storage import create_episodes, scratch_database, store_episode
from lens_fixtures.adapters.temporal import parse_timestamp, temporal_reference, temporal_score
from pytest_lens import CapabilityManifest, SearchResult
from pytest_lens.embedding import Embedder, normalize_rows

__all__ = ["CognisHybridAdapter"]


class CognisHybridAdapter(EmbeddedEpisodeStore):
    """Weighted RRF (k=10, 70/30 vector/BM25), two-stage vector search, temporal boost, de-duplication.

    Options, besides the embedder's (``embedding_model``, ``embedding_base_url``,
    ``embedding_batch_size``, ``cache``, ``cache_dir``): ``rrf_k`` (10),
    ``vector_weight`` (0.7), ``bm25_weight`` (0.3), ``shortlist_dim`` (128),
    ``shortlist_size`` (200), ``similarity_threshold`` (0.0: off), ``temporal_weight`` (0.4),
    ``duplicate_similarity`` (0.99), ``max_chunk_words`` (100),
    ``min_chunk_words`` (60), ``snippet_chars`` (600), ``max_results`` (20), ``embed_queue`` (32: chunks
    queued before they are embedded, which bounds the work of one ``ingest`` call).
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
        rrf_k: float = 10,
        vector_weight: float = 0.7,
        bm25_weight: float = 0.3,
        shortlist_dim: int = 128,
        shortlist_size: int = 200,
        similarity_threshold: float = 0.0,
        temporal_weight: float = 0.4,
        duplicate_similarity: float = 0.99,
        max_chunk_words: int = 100,
        min_chunk_words: int = 60,
        snippet_chars: int = 600,
        max_results: int = 20,
        embed_queue: int = DEFAULT_EMBED_QUEUE,
    ) -> None:
        if not 0 <= temporal_weight <= 1:
            raise ValueError(f"temporal_weight must be within [0, 1], got {temporal_weight}")
        if shortlist_dim < 1 or shortlist_size < 1:
            raise ValueError(f"shortlist_dim and shortlist_size must be positive, got {shortlist_dim} and {shortlist_size}")
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        self._db = scratch_database(storage_dir, "cognis")
        self._rrf_k = rrf_k
        self._weights = {"vector": vector_weight, "bm25": bm25_weight}
        self._shortlist_dim = shortlist_dim
        self._shortlist_size = shortlist_size
        self._threshold = similarity_threshold
        self._temporal_weight = temporal_weight
        self._duplicate = duplicate_similarity
        self._max_chunk_words = max_chunk_words
        self._min_chunk_words = min_chunk_words
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._create()
        self._chunks = ChunkIndex(self._db, self._embedder, table="chunks", keyword_index=True, flush_at=embed_queue)
        self._moments: dict[str, datetime | None] = {}
        self._now: datetime | None = None
        self._short: NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)

    def _create(self) -> None:
        create_episodes(self._db)

    def reset(self, scope_id: str) -> None:
        """Drop every stored episode and chunk."""
        self._create()
        self._chunks.reset()
        self._moments.clear()
        self._now = None
        self._short = np.zeros((0, 0), dtype=np.float32)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the episode and its chunks; chunks are embedded in the next batch (before any search)."""
        with self._db:
            store_episode(self._db, episode_id, scope_id, timestamp, text, meta)
        chunks = chunk_episode(text, self._max_chunk_words, self._min_chunk_words)
        self._chunks.add(episode_id, timestamp, [chunk.text for chunk in chunks])
        moment = self._moments[episode_id] = parse_timestamp(timestamp)
        if moment is not None and (self._now is None or moment > self._now):
            self._now = moment

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Embed whatever is still queued."""
        self._chunks.flush()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The Cognis pipeline over chunks, one result per episode (its best chunk as the snippet)."""
        if not query.strip():
            return []
        limit = max(1, min(limit or 10, self._max_results))
        candidates = self._shortlist_size
        query_vector = self._chunks.query_vector(query)
        mask = self._chunks.live_rows(*date_bounds(filters))
        vector_rows = self._vector_ranking(query_vector, mask, candidates)
        bm25_rows = self._bm25_ranking(query, filters, candidates)
        fused = reciprocal_rank_fusion(
            {"vector": vector_rows, "bm25": bm25_rows},
            k=self._rrf_k,
            weights=self._weights,
            missing_rank={"vector": candidates + 1, "bm25": candidates + 1},
            scale=self._rrf_k + 1,
        )
        reference = temporal_reference(query, self._now)
        scored: list[tuple[float, int]] = []
        for item in fused:
            score = item.score
            if reference is not None:
                ref_id, _ = self._chunks.episode_of(item.key)
                score = (1 - self._temporal_weight) * score + self._temporal_weight * temporal_score(self._moments.get(ref_id), reference)
            scored.append((score, item.key))
        scored.sort(key=lambda pair: -pair[0])  # stable: fusion order breaks ties
        return self._deduplicated(scored, limit)

    def _vector_ranking(self, query_vector: NDArray[np.float32], mask: NDArray[np.bool_] | None, count: int) -> list[int]:
        """Chunk rows: shortlist by truncated vectors, rerank by full vectors, drop those under the threshold."""
        if not len(self._chunks.matrix):
            return []
        short = self._short_matrix()
        width = short.shape[1]
        short_query = normalize_rows(query_vector[None, :width])[0]
        coarse = short @ short_query
        if mask is not None:
            coarse[~mask] = -np.inf
        usable = int(np.isfinite(coarse).sum())
        size = min(self._shortlist_size, usable)
        if size == 0:
            return []
        shortlist = np.argpartition(-coarse, size - 1)[:size] if size < coarse.size else np.arange(coarse.size)
        shortlist = shortlist[np.isfinite(coarse[shortlist])]
        fine = self._chunks.matrix.vectors[shortlist] @ query_vector
        order = np.lexsort((shortlist, -fine))  # best first; equal scores in ingest order, whatever the shortlist order
        return [int(shortlist[i]) for i in order if fine[i] >= self._threshold][:count]

    def _short_matrix(self) -> NDArray[np.float32]:
        """Truncated, renormalised chunk vectors, extended as chunks are added."""
        vectors = self._chunks.matrix.vectors
        if self._short.shape[0] < vectors.shape[0]:
            width = min(self._shortlist_dim, vectors.shape[1])
            fresh = normalize_rows(vectors[self._short.shape[0] :, :width])
            self._short = fresh if not self._short.size else np.vstack([self._short, fresh])
        return self._short

    def _bm25_ranking(self, query: str, filters: dict[str, Any] | None, count: int) -> list[int]:
        """Chunk rows by BM25 (replaced chunks have left the keyword index)."""
        match = fts_query(query)
        if match is None:
            return []
        start, end = date_bounds(filters)
        if not (start or end):
            rows = self._db.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts), rowid LIMIT ?", [match, count]
            ).fetchall()
            return [int(row[0]) for row in rows]
        where, params = ["chunks_fts MATCH ?"], [match]
        if start:
            where.append("e.timestamp >= ?")
            params.append(start)
        if end:
            where.append("e.timestamp <= ?")
            params.append(end + "\uffff")
        rows = self._db.execute(
            f"""SELECT chunks_fts.rowid FROM chunks_fts
                JOIN chunks c ON c.row = chunks_fts.rowid JOIN episodes e ON e.ref_id = c.ref_id
                WHERE {" AND ".join(where)} ORDER BY bm25(chunks_fts), chunks_fts.rowid LIMIT ?""",
            [*params, count],
        ).fetchall()
        return [int(row[0]) for row in rows]

    def _deduplicated(self, scored: list[tuple[float, int]], limit: int) -> list[SearchResult]:
        """Best chunk per episode, then drop results whose chunk near-duplicates a better result's chunk."""
        vectors = self._chunks.matrix.vectors
        kept_rows: list[int] = []
        seen: set[str] = set()
        results = []
        for score, row in scored:
            ref_id, timestamp = self._chunks.episode_of(row)
            if ref_id in seen:
                continue
            seen.add(ref_id)
            if kept_rows and float(np.max(vectors[kept_rows] @ vectors[row])) >= self._duplicate:
                continue
            kept_rows.append(row)
            results.append(
                SearchResult(
                    ref_id=ref_id,
                    text=excerpt(self._chunks.text(row), self._snippet_chars),
                    score=round(score, 6),
                    metadata={"timestamp": timestamp},
                )
            )
            if len(results) == limit:
                break
        return results

    def get_capabilities(self) -> CapabilityManifest:
        """Hybrid search with a date range; no extra tools."""
        return CapabilityManifest(search_modes=["hybrid"], max_results_per_search=self._max_results, supports_date_range=True)
