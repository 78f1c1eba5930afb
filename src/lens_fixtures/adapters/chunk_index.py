"""Embedded chunks of episodes: vectors in a numpy matrix for search, SQLite for the durable copy.

Adding an episode stores its chunks at once and queues them for embedding;
:meth:`ChunkIndex.flush` (called before any search, at ``prepare``, and whenever
``flush_at`` chunks are queued) embeds the queue in one batched call. Embedding
as the stream arrives bounds what one ``ingest`` call can cost: its own chunks
plus fewer than ``flush_at`` queued ones (with the default 32 and 5,000-word
episodes, at most about 80 chunks of 100 words), where a queue of 512 chunks
made one call embed 512-560 chunks: minutes on a busy 2-core machine, past the
call timeout (``benchmarks/v2_ingest.py``). 32 is the batch the model encodes at
a time on CPU, so small episodes still embed in full batches.
A search is one matrix-vector product over every chunk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_lens.embedding import Embedder, Vectors

__all__ = ["DEFAULT_EMBED_QUEUE", "BestChunks", "ChunkIndex", "EpisodeHit", "VectorMatrix", "date_bounds"]

#: Chunks queued before they are embedded (adapter option ``embed_queue``).
DEFAULT_EMBED_QUEUE = 32


def date_bounds(filters: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """``(start_date, end_date)`` from search filters (``None`` when absent or empty)."""
    filters = filters or {}
    start, end = filters.get("start_date"), filters.get("end_date")
    return (str(start) if start else None, str(end) if end else None)


class VectorMatrix:
    """A growable float32 matrix (capacity doubles) with one owner id per row."""

    def __init__(self) -> None:
        self._data: NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._owners: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def vectors(self) -> NDArray[np.float32]:
        """The filled rows (a view)."""
        return self._data[: self._size]

    @property
    def owners(self) -> NDArray[np.int64]:
        """Owner id of each filled row (a view)."""
        return self._owners[: self._size]

    def append(self, vectors: Vectors, owners: Sequence[int]) -> None:
        """Add rows; every row needs an owner and the same width as the rows before."""
        if vectors.shape[0] != len(owners):
            raise ValueError(f"{vectors.shape[0]} vectors but {len(owners)} owners")
        if vectors.shape[0] == 0:
            return
        if self._size and vectors.shape[1] != self._data.shape[1]:
            raise ValueError(f"vectors of width {vectors.shape[1]} cannot join a matrix of width {self._data.shape[1]}")
        needed = self._size + vectors.shape[0]
        if needed > self._data.shape[0] or self._data.shape[1] != vectors.shape[1]:
            capacity = max(needed, 2 * self._data.shape[0], 256)
            data = np.zeros((capacity, vectors.shape[1]), dtype=np.float32)
            owner_ids = np.zeros(capacity, dtype=np.int64)
            if self._size:
                data[: self._size] = self._data[: self._size]
                owner_ids[: self._size] = self._owners[: self._size]
            self._data, self._owners = data, owner_ids
        self._data[self._size : needed] = vectors
        self._owners[self._size : needed] = np.asarray(owners, dtype=np.int64)
        self._size = needed

    def clear(self) -> None:
        """Drop every row (capacity is released)."""
        self.__init__()  # type: ignore[misc]


@dataclass(frozen=True)
class EpisodeHit:
    """An episode ranked by its best chunk."""

    ref_id: str
    timestamp: str
    row: int
    score: float


@dataclass(frozen=True)
class BestChunks:
    """Episodes scored by their best chunk (:meth:`ChunkIndex.best_chunks`), in ingest order."""

    refs: list[str]
    timestamps: list[str]
    #: Each episode's best chunk row and its similarity.
    rows: NDArray[np.intp]
    scores: NDArray[np.float32]


@dataclass
class _Episode:
    ref_id: str
    timestamp: str
    rows: range
    alive: bool = True


class ChunkIndex:
    """Episodes' chunks with their vectors, in ``db`` (table ``{table}``) and in memory.

    Each ingest of an episode gets a new owner id; re-ingesting an id retires
    the old owner's rows, so a search never sees stale chunks.
    With ``keyword_index`` the chunk texts are also in an FTS5 table
    ``{table}_fts`` (rowid = matrix row) for chunk-level BM25.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        embedder: Embedder,
        *,
        table: str = "chunks",
        keyword_index: bool = False,
        flush_at: int = DEFAULT_EMBED_QUEUE,
        inputs: Callable[[str], int] | None = None,
    ) -> None:
        if flush_at < 1:
            raise ValueError(f"the embedding queue must hold at least 1 chunk, got {flush_at}")
        self.db = db
        self.embedder = embedder
        self.table = table
        self.keyword_index = keyword_index
        self.flush_at = flush_at
        #: What one stored text costs the model, in its inputs (default 1: the text is one input). An embedder
        #: that splits each text (a pooled one embeds every section chunk of an episode) says how many, so the
        #: queue bounds the model's work per call, not the texts.
        self.inputs = inputs or (lambda text: 1)
        self.matrix = VectorMatrix()
        self._episodes: list[_Episode] = []
        self._current: dict[str, int] = {}
        self._texts: list[str] = []
        self._row_owner: list[int] = []
        self._retired = 0  # episodes replaced by a later ingest of the same id
        self._pending: list[int] = []  # rows stored but not yet embedded
        self._pending_inputs = 0  # the model inputs they cost
        self._timestamps: NDArray[np.str_] | None = None
        self._create()

    def _create(self) -> None:
        self.db.execute(f"DROP TABLE IF EXISTS [{self.table}_fts]")
        self.db.execute(f"DROP TABLE IF EXISTS [{self.table}]")
        self.db.execute(
            f"CREATE TABLE [{self.table}] ([row] INTEGER PRIMARY KEY, [ref_id] TEXT NOT NULL, [position] INTEGER, "
            "[text] TEXT NOT NULL, [vector] BLOB)"
        )
        self.db.execute(f"CREATE INDEX [{self.table}_ref] ON [{self.table}] (ref_id)")
        if self.keyword_index:
            self.db.execute(
                f"CREATE VIRTUAL TABLE [{self.table}_fts] USING fts5(text, content='{self.table}', content_rowid='row', "
                "tokenize='porter unicode61')"
            )

    # -- writing -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every chunk."""
        self.matrix.clear()
        self._episodes.clear()
        self._current.clear()
        self._texts.clear()
        self._row_owner.clear()
        self._retired = 0
        self._pending.clear()
        self._pending_inputs = 0
        self._timestamps = None
        self._create()

    def add(self, ref_id: str, timestamp: str, texts: Sequence[str]) -> None:
        """Store ``ref_id``'s chunks (replacing earlier ones) and queue them for embedding."""
        start = len(self._texts)
        with self.db:
            previous = self._current.get(ref_id)
            if previous is not None:
                self._episodes[previous].alive = False
                self._retired += 1
                if self.keyword_index:
                    for row in self._episodes[previous].rows:
                        self.db.execute(
                            f"INSERT INTO [{self.table}_fts]([{self.table}_fts], rowid, text) VALUES ('delete', ?, ?)",
                            [row, self._texts[row]],
                        )
            rows = [(start + i, ref_id, i, text) for i, text in enumerate(texts)]
            if rows:
                self.db.executemany(f"INSERT INTO [{self.table}] ([row], [ref_id], [position], [text]) VALUES (?, ?, ?, ?)", rows)
                if self.keyword_index:
                    keyword_rows = [(row, text) for row, _, _, text in rows]
                    self.db.executemany(f"INSERT INTO [{self.table}_fts](rowid, text) VALUES (?, ?)", keyword_rows)
        self._current[ref_id] = len(self._episodes)
        self._episodes.append(_Episode(ref_id, timestamp, range(start, start + len(texts))))
        self._texts.extend(texts)
        self._row_owner.extend([len(self._episodes) - 1] * len(texts))
        self._pending.extend(range(start, start + len(texts)))
        self._pending_inputs += sum(self.inputs(text) for text in texts)
        self._timestamps = None
        if self._pending_inputs >= self.flush_at:
            self.flush()

    def flush(self) -> None:
        """Embed every queued chunk (one batched call) and append the vectors."""
        if not self._pending:
            return
        rows = self._pending
        vectors = self.embedder.encode([self._texts[row] for row in rows])
        owners = [self._owner_of(row) for row in rows]
        with self.db:
            self.db.executemany(
                f"UPDATE [{self.table}] SET vector = ? WHERE row = ?",
                [(vector.tobytes(), row) for vector, row in zip(vectors, rows, strict=True)],
            )
        self.matrix.append(vectors, owners)
        self._pending = []
        self._pending_inputs = 0

    # -- reading -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._texts)

    @property
    def queued(self) -> int:
        """Model inputs stored but not embedded yet (what the next flush, at the latest ``prepare``, embeds)."""
        return self._pending_inputs

    @property
    def episode_count(self) -> int:
        """Live episodes."""
        return len(self._current)

    def text(self, row: int) -> str:
        """A chunk's text."""
        return self._texts[row]

    def episode_of(self, row: int) -> tuple[str, str]:
        """``(ref_id, timestamp)`` of a chunk's episode."""
        episode = self._episodes[self._owner_of(row)]
        return episode.ref_id, episode.timestamp

    def rows_of(self, ref_id: str) -> range:
        """The current chunk rows of ``ref_id`` (empty if unknown)."""
        owner = self._current.get(ref_id)
        return self._episodes[owner].rows if owner is not None else range(0)

    def query_vector(self, query: str) -> NDArray[np.float32]:
        """The query's embedding (through the cache)."""
        vector: NDArray[np.float32] = self.embedder.encode([query])[0]
        return vector

    def similarities(self, query_vector: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine similarity of every chunk row with the query (vectors are normalised)."""
        self.flush()
        if not len(self.matrix):
            return np.zeros(0, dtype=np.float32)
        return self.matrix.vectors @ query_vector

    def live_rows(self, start_date: str | None = None, end_date: str | None = None) -> NDArray[np.bool_] | None:
        """Mask of rows whose episode is current and (optionally) dated within ``[start_date, end_date]``.

        ``None`` when every row qualifies (no filter, nothing re-ingested): the common and fastest case.
        """
        self.flush()
        if not (start_date or end_date) and self._retired == 0:
            return None
        alive = np.fromiter((episode.alive for episode in self._episodes), dtype=bool, count=len(self._episodes))
        if start_date or end_date:
            stamps = self._timestamp_array()
            if start_date:
                alive &= stamps >= start_date
            if end_date:
                alive &= stamps <= end_date + "\uffff"  # an end date includes that whole day
        mask: NDArray[np.bool_] = alive[self.matrix.owners]
        return mask

    def rank_episodes(self, similarities: NDArray[np.float32], count: int, mask: NDArray[np.bool_] | None = None) -> list[EpisodeHit]:
        """The ``count`` episodes with the best chunk similarity, best first (one hit per episode)."""
        if count < 1 or similarities.size == 0:
            return []
        scores = similarities
        if mask is not None:
            scores = similarities.astype(np.float32, copy=True)
            scores[~mask] = -np.inf
        owners = self.matrix.owners
        usable = int(np.isfinite(scores).sum())
        window = min(usable, max(count * 16, 64))
        while True:
            if window >= scores.size:
                top = np.argsort(-scores, kind="stable")
            else:
                top = np.argpartition(-scores, window - 1)[:window]
                top = top[np.lexsort((top, -scores[top]))]  # equal scores in ingest order, as in the full sort
            top = top[np.isfinite(scores[top])]
            _, first = np.unique(owners[top], return_index=True)
            best_rows = top[np.sort(first)]
            if len(best_rows) >= count or window >= usable:
                break
            window = min(usable, window * 4)
        hits = []
        for row in best_rows[:count]:
            episode = self._episodes[int(owners[row])]
            hits.append(EpisodeHit(episode.ref_id, episode.timestamp, int(row), float(scores[row])))
        return hits

    def best_chunks(self, similarities: NDArray[np.float32], mask: NDArray[np.bool_] | None = None) -> BestChunks:
        """Every episode with a chunk the ``mask`` allows (current ones only), scored by its best chunk: late interaction.

        One pass over the rows: an episode's rows are contiguous and owners only grow, so the best of each
        episode is a ``maximum.reduceat`` over the row ranges.
        """
        if similarities.size == 0:
            return BestChunks([], [], np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32))
        scores = similarities.astype(np.float32, copy=True)
        if mask is None and self._retired:
            mask = self.live_rows()
        if mask is not None:
            scores[~mask] = -np.inf
        owners = self.matrix.owners
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        best = np.maximum.reduceat(scores, starts)
        keep = np.isfinite(best)
        # The first row reaching the maximum within each range (ties: the earlier chunk).
        ranges = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, owners.size]))
        is_best = scores == best[ranges]
        first = np.full(starts.size, -1, dtype=np.intp)
        hit_rows = np.flatnonzero(is_best)
        first[ranges[hit_rows][::-1]] = hit_rows[::-1]
        episodes = [self._episodes[int(owner)] for owner in owners[starts[keep]]]
        return BestChunks([e.ref_id for e in episodes], [e.timestamp for e in episodes], first[keep], best[keep])

    def best_row(self, ref_id: str, similarities: NDArray[np.float32]) -> int | None:
        """The chunk row of ``ref_id`` most similar to the query, or ``None`` without chunks."""
        rows = self.rows_of(ref_id)
        if not len(rows) or rows.stop > similarities.size:
            return None
        return rows.start + int(np.argmax(similarities[rows.start : rows.stop]))

    def _owner_of(self, row: int) -> int:
        return self._row_owner[row]

    def _timestamp_array(self) -> NDArray[np.str_]:
        if self._timestamps is None or len(self._timestamps) != len(self._episodes):
            self._timestamps = np.array([episode.timestamp for episode in self._episodes], dtype=np.str_)
        return self._timestamps
