"""sqlite-chunked-hybrid: BM25 over whole episodes and embedded section chunks, fused by score.

- Full episodes go into SQLite FTS5 (porter stemming) and are ranked by ``bm25()``
  (the :class:`~lens_fixtures.adapters.bm25.BM25Adapter` this class extends).
- Each episode is also split at ``###`` section boundaries into chunks with the date
  header prepended (:func:`chunk_episode`); every chunk is embedded and an episode
  scores its best chunk's cosine similarity (late interaction: a detail deep in a long
  episode or session is not diluted by the rest of it).
- Search scores every stored episode on both legs side by side (BM25 in a helper thread;
  an episode without a query term scores 0), z-scores each leg over the stored episodes,
  weights each leg by its confidence for the query (1 + the gap between its two best
  z-scores) and sums them with one weight, BM25 ``bm25_weight`` = 0.4 and the dense leg
  0.6 (:func:`~lens_fixtures.adapters.fusion.score_fusion`). That is the training-free
  recipe published as beating BM25 on LoCoMo (Lysenstøen 2026, arXiv 2606.04194: BM25
  fused by score with a dense score taken at each session's best turn), with the
  confidence weighting added and the weight chosen on generated scopes only
  (``benchmarks/hybrid_weight.py``). ``fusion="rrf"`` is the LENS paper's reciprocal rank
  fusion (k=60) instead. One result per episode: its best-matching chunk as the snippet.
  ``retrieve`` and ``batch_retrieve`` return stored text verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE
from lens_fixtures.adapters.bm25 import BM25Adapter, BM25Hit
from lens_fixtures.adapters.chunk_index import DEFAULT_EMBED_QUEUE, ChunkIndex, date_bounds
from lens_fixtures.adapters.chunking import chunk_episode
from lens_fixtures.adapters.embedding_options import embedder_from_options, embedding_extras
from lens_fixtures.adapters.fusion import FusedItem, reciprocal_rank_fusion, score_fusion
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, SearchResult
from pytest_lens.embedding import Embedder

__all__ = ["BM25_WEIGHT", "FUSIONS", "SQLiteHybridAdapter"]

#: How the two legs are fused: by their z-scored scores (one weight), or by reciprocal rank (k=60; the LENS paper's).
FUSIONS = ("score", "rrf")
#: The keyword leg's weight in score fusion (the dense leg gets the rest): chosen on generated scopes of seeds 7, 11 and
#: 13, never on a scope or question a run reports on (``benchmarks/hybrid_weight.py``, docs/reference-adapters.md).
BM25_WEIGHT = 0.4


class SQLiteHybridAdapter(BM25Adapter):
    """BM25 (FTS5) + chunk embeddings fused by score, one result per episode, ``batch_retrieve``.

    Options, besides the embedder's (``embedding_model``, ``embedding_base_url``,
    ``embedding_batch_size``, ``cache``, ``cache_dir``): ``max_chunk_words`` (150),
    ``min_chunk_words`` (60; shorter sections join the next), ``fusion`` (``score``, or ``rrf``),
    ``bm25_weight`` (0.4; the dense leg gets the rest), ``leg_confidence`` (true: each leg weighted
    by the gap between its two best z-scores), and for ``fusion="rrf"``: ``rrf_k`` (60) and
    ``candidate_factor`` (3: each ranking contributes ``limit * 3`` candidates),
    ``snippet_chars`` (600), ``max_results`` (20), ``embed_queue`` (32: chunks queued before they are
    embedded, which bounds the work of one ``ingest`` call; see :mod:`~lens_fixtures.adapters.chunk_index`).

    The chunk defaults, 150 / 60 words, are chosen by ``benchmarks/chunk_defaults.py`` on data that is
    never a real LENS scope nor a bundled scope a run reports on: the generator's six domains at seed 7
    (144 questions) and LoCoMo's first four conversations (755 questions). For each configuration of a
    grid (100/20, 100/60, 150/60, 200/60, 300/60) a fresh adapter takes each stream in order and every
    question's prompt is searched as the offline agent's first search (limit 10, rank fusion); the objective is the
    mean over the two sources of their first-search nDCG@10. 150/60 scored 0.6187, the best; 100/20 and
    100/60 came within 0.005 of it (ties go to the largest chunks, the fewest vectors); 200/60 and 300/60
    more than 0.005 below. The previous default, 100/60, had been picked on real LENS scope 01's 24
    questions. Caveat: MiniLM reads 256 word-pieces and metric-heavy logs run about two pieces per word,
    so some 150-word chunks of log-like episodes are cut at the model's window (the paper's
    GTE-ModernBERT had room); ``min_chunk_words=20`` with 150 is the paper's setting.
    """

    database_prefix = "sqlite-hybrid"

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The extra its embedder needs: the offline model's, or an endpoint's client."""
        return embedding_extras(options)

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
        max_chunk_words: int = 150,
        min_chunk_words: int = 60,
        fusion: str = "score",
        bm25_weight: float = BM25_WEIGHT,
        leg_confidence: bool = True,
        rrf_k: float = 60,
        candidate_factor: int = 3,
        snippet_chars: int = 600,
        max_results: int = 20,
        embed_queue: int = DEFAULT_EMBED_QUEUE,
    ) -> None:
        if candidate_factor < 1:
            raise ValueError(f"candidate_factor must be at least 1, got {candidate_factor}")
        if fusion not in FUSIONS:
            raise ValueError(f"option fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
        if isinstance(bm25_weight, bool) or not isinstance(bm25_weight, int | float) or not 0 <= bm25_weight <= 1:
            raise ValueError(f"option bm25_weight must be a number from 0 to 1, got {bm25_weight!r}")
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        super().__init__(storage_dir, max_results=max_results)
        self._chunks = ChunkIndex(self._db, self._embedder, table="chunks", flush_at=embed_queue)
        self._max_chunk_words = max_chunk_words
        self._min_chunk_words = min_chunk_words
        self._fusion = fusion
        self._bm25_weight = float(bm25_weight)
        self._leg_confidence = leg_confidence
        self._rrf_k = rrf_k
        self._candidate_factor = candidate_factor
        self._snippet_chars = snippet_chars
        self._keyword_worker: ThreadPoolExecutor | None = None

    def reset(self, scope_id: str) -> None:
        """Drop every episode, index entry and chunk."""
        super().reset(scope_id)
        self._chunks.reset()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store and index the episode; its chunks are embedded in the next batch (before any search)."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        chunks = chunk_episode(text, self._max_chunk_words, self._min_chunk_words)
        self._chunks.add(episode_id, timestamp, [chunk.text for chunk in chunks])

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Embed whatever is still queued."""
        self._chunks.flush()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The BM25 and best-chunk legs fused (by score, or by rank with ``fusion="rrf"``); one result per episode."""
        if not query.strip():
            return []
        limit = max(1, min(limit or 10, self._max_results))
        self._chunks.flush()  # every write happens before the keyword leg starts reading
        if self._keyword_worker is None:
            self._keyword_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lens-bm25")
        # The two legs are independent and both release the GIL (SQLite, numpy): run them side by side.
        by_score = self._fusion == "score"
        candidates = None if by_score else limit * self._candidate_factor
        keyword_leg = self._keyword_worker.submit(self.rank, query, filters, candidates, snippets=False)
        similarities = self._chunks.similarities(self._chunks.query_vector(query))
        mask = self._chunks.live_rows(*date_bounds(filters))
        if by_score:
            dense = self._chunks.best_chunks(similarities, mask)
            keyword = keyword_leg.result()
            semantic_scores = dict(zip(dense.refs, dense.scores.tolist(), strict=True))
            legs = {"bm25": {hit.ref_id: hit.score for hit in keyword}, "embedding": semantic_scores}
            fused = score_fusion(
                legs,
                {"bm25": self._bm25_weight, "embedding": 1 - self._bm25_weight},
                absent={"bm25": 0.0},  # no query term in the episode: BM25 scores it 0
                confidence=self._leg_confidence,
            )[:limit]
            stamps = dict(zip(dense.refs, dense.timestamps, strict=True))
            best_rows = {ref: int(row) for ref, row in zip(dense.refs, dense.rows, strict=True)}
        else:
            semantic = self._chunks.rank_episodes(similarities, candidates or limit, mask)
            keyword = keyword_leg.result()
            fused = reciprocal_rank_fusion(
                {"bm25": [hit.ref_id for hit in keyword], "embedding": [hit.ref_id for hit in semantic]}, k=self._rrf_k
            )[:limit]
            stamps = {hit.ref_id: hit.timestamp for hit in semantic}
            best_rows = {hit.ref_id: hit.row for hit in semantic}
        return self._results(query, fused, keyword, stamps, best_rows)

    def _results(
        self, query: str, fused: list[FusedItem[str]], keyword: list[BM25Hit], stamps: dict[str, str], best_rows: dict[str, int]
    ) -> list[SearchResult]:
        """One result per fused episode: its closest chunk as the snippet, or the keyword context when it has no chunk."""
        timestamps = {hit.ref_id: hit.timestamp for hit in keyword} | stamps
        by_ref = {hit.ref_id: hit for hit in keyword}
        keyword_snippets = self.keyword_snippets(query, [by_ref[item.key] for item in fused if item.key not in best_rows])
        results = []
        for item in fused:
            ref = item.key
            row = best_rows.get(ref)
            snippet = excerpt(self._chunks.text(row), self._snippet_chars) if row is not None else keyword_snippets.get(ref, "")
            results.append(SearchResult(ref_id=ref, text=snippet, score=round(item.score, 6), metadata={"timestamp": timestamps[ref]}))
        return results

    def get_capabilities(self) -> CapabilityManifest:
        """Keyword and semantic search, a date range, ``batch_retrieve``."""
        return CapabilityManifest(
            search_modes=["keyword", "semantic"],
            max_results_per_search=self._max_results,
            supports_date_range=True,
            extra_tools=[BATCH_RETRIEVE],
        )

    def lens_stats(self) -> dict[str, int]:
        """Embedding-cache hits and misses, and encoding time, since construction."""
        return self._embedder.stats.as_counters()

    def close(self) -> None:
        """Stop the keyword thread, close the database and the cache."""
        if self._keyword_worker is not None:
            self._keyword_worker.shutdown(wait=True)
        super().close()
        self._embedder.close()
