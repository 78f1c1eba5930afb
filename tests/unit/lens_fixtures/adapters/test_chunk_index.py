from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pytest

from lens_fixtures.adapters.chunk_index import ChunkIndex, VectorMatrix, date_bounds
from pytest_lens.embedding import CachedEmbedder


def _index(embedder: Any, **kwargs: Any) -> ChunkIndex:
    return ChunkIndex(sqlite3.connect(":memory:"), CachedEmbedder(embedder, None), **kwargs)


def test_matrix_grows_and_keeps_rows_and_owners() -> None:
    matrix = VectorMatrix()
    for i in range(300):
        matrix.append(np.full((2, 3), i, dtype=np.float32), [i, i])
    assert len(matrix) == 600
    assert matrix.vectors[599, 0] == 299
    assert matrix.owners.tolist()[:4] == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="width 4"):
        matrix.append(np.zeros((1, 4), dtype=np.float32), [0])
    with pytest.raises(ValueError, match="2 vectors but 1 owners"):
        matrix.append(np.zeros((2, 3), dtype=np.float32), [0])
    matrix.clear()
    assert len(matrix) == 0


def test_chunks_are_embedded_in_one_batch_when_searched(hashing: Any) -> None:
    index = _index(hashing)
    index.add("e1", "2024-01-01", ["red apples", "green pears"])
    index.add("e2", "2024-01-02", ["blue sky"])
    assert hashing.calls == []  # ingest only queues
    similarities = index.similarities(index.query_vector("blue sky"))
    assert hashing.calls == [["blue sky"], ["red apples", "green pears", "blue sky"]]  # the query, then one batch
    assert similarities.shape == (3,)
    stored = index.db.execute("SELECT row, vector FROM chunks ORDER BY row").fetchall()
    np.testing.assert_array_equal(np.frombuffer(stored[2][1], dtype=np.float32), index.matrix.vectors[2])


def test_a_long_queue_flushes_by_itself(hashing: Any) -> None:
    index = _index(hashing, flush_at=4)
    index.add("e1", "t", ["a", "b", "c"])
    assert hashing.calls == []
    index.add("e2", "t", ["d", "e"])
    assert hashing.calls == [["a", "b", "c", "d", "e"]]
    assert len(index.matrix) == 5


def test_episodes_rank_by_their_best_chunk_one_hit_each(hashing: Any) -> None:
    index = _index(hashing)
    index.add("weather", "2024-01-01", ["rain and wind today", "sunny spells later"])
    index.add("fruit", "2024-01-02", ["apples and pears", "rain washed the apples"])
    index.add("sky", "2024-01-03", ["blue sky at dawn"])
    similarities = index.similarities(index.query_vector("rain wind"))
    hits = index.rank_episodes(similarities, 5, index.live_rows())
    assert [hit.ref_id for hit in hits][:2] == ["weather", "fruit"]
    assert len({hit.ref_id for hit in hits}) == len(hits) == 3
    assert index.text(hits[0].row) == "rain and wind today"
    assert hits[0].score == pytest.approx(float(similarities[hits[0].row]))
    assert index.best_row("fruit", similarities) == 3


def test_many_strong_chunks_of_one_episode_do_not_crowd_out_others(hashing: Any) -> None:
    index = _index(hashing)
    index.add("big", "t", ["storm warning"] * 200)
    for i in range(5):
        index.add(f"small{i}", "t", [f"storm {i} note"])
    similarities = index.similarities(index.query_vector("storm warning"))
    hits = index.rank_episodes(similarities, 4, index.live_rows())
    assert hits[0].ref_id == "big"
    assert len(hits) == 4
    assert len({hit.ref_id for hit in hits}) == 4


def test_date_filters_and_reingest_hide_rows(hashing: Any) -> None:
    index = _index(hashing, keyword_index=True)
    index.add("jan", "2024-01-10T08:00:00", ["alpha report"])
    index.add("feb", "2024-02-10T08:00:00", ["alpha summary"])
    index.add("jan", "2024-01-11T08:00:00", ["beta rewrite"])  # replaces the first "jan"
    similarities = index.similarities(index.query_vector("alpha report"))
    everything = index.rank_episodes(similarities, 10, index.live_rows())
    assert [hit.ref_id for hit in everything].count("jan") == 1
    assert index.text(next(hit.row for hit in everything if hit.ref_id == "jan")) == "beta rewrite"
    february = index.rank_episodes(similarities, 10, index.live_rows(start_date="2024-02-01"))
    assert [hit.ref_id for hit in february] == ["feb"]
    january = index.rank_episodes(similarities, 10, index.live_rows(end_date="2024-01-11"))
    assert [hit.ref_id for hit in january] == ["jan"]  # an end date includes its whole day
    fts = index.db.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'alpha' ORDER BY rowid").fetchall()
    assert fts == [(1,)]  # the replaced chunk left the keyword index
    assert index.episode_count == 2


def test_reset_forgets_everything(hashing: Any) -> None:
    index = _index(hashing)
    index.add("e", "t", ["x"])
    index.flush()
    index.reset()
    assert len(index) == 0
    assert len(index.matrix) == 0
    assert index.rank_episodes(index.similarities(index.query_vector("x")), 3) == []
    assert index.db.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0


def test_date_bounds() -> None:
    assert date_bounds(None) == (None, None)
    assert date_bounds({"start_date": "2024-01-01", "end_date": ""}) == ("2024-01-01", None)


def test_the_stream_is_embedded_as_it_arrives_never_more_than_one_episode_and_a_queue_per_call(hashing: Any) -> None:
    """V2 episodes run to ~50 chunks: no add may leave more than the queue behind or embed more than its own + the queue."""
    from lens_fixtures.adapters.chunk_index import DEFAULT_EMBED_QUEUE

    index = _index(hashing)
    assert index.flush_at == DEFAULT_EMBED_QUEUE == 32
    for episode in range(12):
        before = len(hashing.calls)
        index.add(f"e{episode}", "2024-01-01", [f"chunk {episode} {i}" for i in range(50)])
        embedded = sum(len(call) for call in hashing.calls[before:])
        assert embedded <= 50 + DEFAULT_EMBED_QUEUE - 1
        assert index.queued < DEFAULT_EMBED_QUEUE  # what prepare has left to do
    assert sum(len(call) for call in hashing.calls) >= 12 * 50 - DEFAULT_EMBED_QUEUE


def test_an_empty_queue_is_refused(hashing: Any) -> None:
    with pytest.raises(ValueError, match="at least 1 chunk"):
        _index(hashing, flush_at=0)


def test_best_chunks_scores_every_live_episode_by_its_best_chunk(hashing: Any) -> None:
    index = _index(hashing)
    index.add("weather", "2024-01-01", ["rain and wind today", "sunny spells later"])
    index.add("fruit", "2024-01-02", ["apples and pears", "rain washed the apples"])
    index.add("empty", "2024-01-02", [])
    index.add("sky", "2024-01-03", ["blue sky at dawn"])
    index.add("fruit", "2024-01-04", ["pears only"])  # replaces the first "fruit"
    similarities = index.similarities(index.query_vector("rain wind"))
    found = index.best_chunks(similarities)
    assert found.refs == ["weather", "sky", "fruit"]  # every live episode with a chunk, in ingest order; no "empty"
    for ref, row, score in zip(found.refs, found.rows, found.scores, strict=True):
        rows = index.rows_of(ref)
        assert rows.start <= row < rows.stop and score == pytest.approx(float(similarities[rows.start : rows.stop].max()))
    assert index.text(int(found.rows[0])) == "rain and wind today"
    dated = index.best_chunks(similarities, index.live_rows(start_date="2024-01-03"))
    assert dated.refs == ["sky", "fruit"] and dated.timestamps == ["2024-01-03", "2024-01-04"]
