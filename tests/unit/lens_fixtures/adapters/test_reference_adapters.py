"""Behaviour every embedding-backed reference adapter shares, plus each one's own features (fast hashing embedder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.adapters.batch import BATCH_RETRIEVE
from lens_fixtures.adapters.cognis import CognisHybridAdapter
from lens_fixtures.adapters.embedding import EmbeddingAdapter
from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens.contract.checks import validate_manifest

ADAPTERS = {"embedding": EmbeddingAdapter, "sqlite-hybrid": SQLiteHybridAdapter, "cognis-hybrid": CognisHybridAdapter}
EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Log\n### Pumps\n- pump seven vibration normal\n### Notes\n- quiet night shift"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Log\n### Pumps\n- pump seven vibration rising sharply\n### Notes\n- ordered bearing kit"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Log\n### Weather\n- heavy snow closed the north road"),
    ("ep4", "2024-01-04T10:00:00", "## 2024-01-04 Log\n### Pumps\n- pump seven bearing replaced, vibration back to normal"),
]


def _filled(cls: type[Any], **options: Any) -> Any:
    adapter = cls(**options)
    adapter.reset("scope")
    for ref, timestamp, text in EPISODES:
        adapter.ingest(ref, "scope", timestamp, text, {"episode_type": "signal"})
    return adapter


@pytest.fixture(params=sorted(ADAPTERS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_search_honours_limit_returns_stored_ids_and_short_snippets(name: str, hashing: Any) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing, snippet_chars=60)
    results = adapter.search("pump seven vibration", None, 2)
    assert 1 <= len(results) <= 2
    assert {r.ref_id for r in results} <= {"ep1", "ep2", "ep4"}
    assert all(len(r.text) <= 60 for r in results)
    assert len({r.ref_id for r in results}) == len(results)  # one result per episode
    assert all(set(r.metadata) == {"timestamp"} for r in results)  # labels in meta never leak
    assert adapter.search("   ", None, 5) == []


def test_retrieve_is_verbatim_and_unknown_is_none(name: str, hashing: Any) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing)
    document = adapter.retrieve("ep3")
    assert document is not None
    assert document.text == EPISODES[2][2]
    assert adapter.retrieve("nope") is None


def test_date_range_filters(name: str, hashing: Any) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing)
    assert adapter.get_capabilities().supports_date_range
    results = adapter.search("pump seven vibration", {"start_date": "2024-01-02", "end_date": "2024-01-03"}, 10)
    assert results[0].ref_id == "ep2"
    assert {r.ref_id for r in results} <= {"ep2", "ep3"}  # an end date includes its whole day


def test_reset_empties_and_reingest_replaces(name: str, hashing: Any) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing)
    adapter.ingest("ep3", "scope", "2024-01-03T10:00:00", "## 2024-01-03 Log\n### Weather\n- warm sunshine all day")
    assert adapter.retrieve("ep3").text.endswith("warm sunshine all day")
    assert [r.ref_id for r in adapter.search("heavy snow north road", None, 10)].count("ep3") <= 1
    top = adapter.search("warm sunshine", None, 1)
    assert [r.ref_id for r in top] == ["ep3"]
    adapter.reset("scope")
    assert adapter.search("pump seven", None, 5) == []
    assert adapter.retrieve("ep1") is None


def test_manifest_is_valid_and_counters_are_reported(name: str, hashing: Any) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing)
    validate_manifest(adapter.get_capabilities())
    adapter.search("pump", None, 3)
    stats = adapter.lens_stats()
    assert stats["embed_cache_misses"] > 0
    assert stats["embed_cache_hits"] >= 0
    assert set(stats) == {"embed_cache_hits", "embed_cache_misses", "embed_ms"}


def test_storage_lives_under_storage_dir(name: str, hashing: Any, tmp_path: Path) -> None:
    adapter = _filled(ADAPTERS[name], embedder=hashing, storage_dir=str(tmp_path))
    adapter.search("pump", None, 3)
    assert list(tmp_path.glob("*.db"))
    adapter.close()


def test_a_second_adapter_instance_reuses_the_cached_embeddings(name: str, make_hashing: Any) -> None:
    first_model, second_model = make_hashing(), make_hashing()
    _filled(ADAPTERS[name], embedder=first_model).search("pump seven", None, 3)
    second = _filled(ADAPTERS[name], embedder=second_model)
    second.search("pump seven", None, 3)
    assert second_model.calls == []
    assert second.lens_stats()["embed_cache_misses"] == 0
    assert second.lens_stats()["embed_cache_hits"] == first_model.texts_encoded


def test_cache_can_be_disabled(name: str, make_hashing: Any) -> None:
    _filled(ADAPTERS[name], embedder=make_hashing()).search("pump", None, 3)
    model = make_hashing()
    _filled(ADAPTERS[name], embedder=model, cache=False).search("pump", None, 3)
    assert model.texts_encoded > 0


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("cache", "yes", "cache must be true or false"), ("embedding_batch_size", 0, "positive integer"), ("embedding_model", 3, "string")],
)
def test_bad_options_are_named(name: str, option: str, value: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        ADAPTERS[name](**{option: value})


def test_sqlite_hybrid_offers_batch_retrieve(hashing: Any) -> None:
    adapter = _filled(SQLiteHybridAdapter, embedder=hashing)
    assert adapter.get_capabilities().extra_tools == [BATCH_RETRIEVE]
    result = adapter.call_extended_tool("batch_retrieve", {"ref_ids": ["ep4", "missing", "ep1"]})
    assert result == {"documents": [{"ref_id": "ep4", "text": EPISODES[3][2]}, {"ref_id": "ep1", "text": EPISODES[0][2]}], "count": 2}


def test_sqlite_hybrid_fuses_the_z_scores_of_bm25_and_each_episodes_best_chunk(hashing: Any) -> None:
    import numpy as np

    adapter = _filled(SQLiteHybridAdapter, embedder=hashing, bm25_weight=0.7)
    keyword = {hit.ref_id: hit.score for hit in adapter.rank("pump bearing", None, None)}
    dense = adapter._chunks.best_chunks(adapter._chunks.similarities(adapter._chunks.query_vector("pump bearing")))
    bm25 = np.array([keyword.get(ref, 0.0) for ref in dense.refs])  # an episode without the terms: BM25 0
    cosine = dense.scores.astype(np.float64)
    z_bm25, z_dense = (bm25 - bm25.mean()) / bm25.std(), (cosine - cosine.mean()) / cosine.std()

    def sure(z: Any) -> float:  # each leg's confidence: 1 + the gap between its two best z-scores
        first, second = sorted(z, reverse=True)[:2]
        return float(1 + first - second)

    for confident, expected in (
        (True, 0.7 * sure(z_bm25) * z_bm25 + 0.3 * sure(z_dense) * z_dense),
        (False, 0.7 * z_bm25 + 0.3 * z_dense),
    ):
        adapter._leg_confidence = confident
        results = adapter.search("pump bearing", None, 4)
        assert {r.ref_id: r.score for r in results} == pytest.approx(dict(zip(dense.refs, expected.round(6), strict=True)), abs=1e-6)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    # Each result's snippet is its best chunk.
    best = {ref: adapter._chunks.text(int(row)) for ref, row in zip(dense.refs, dense.rows, strict=True)}
    assert all(best[r.ref_id].startswith(r.text.removesuffix(" ...")) for r in results)
    with pytest.raises(ValueError, match="bm25_weight must be a number from 0 to 1"):
        SQLiteHybridAdapter(embedder=hashing, bm25_weight=1.5)
    with pytest.raises(ValueError, match="fusion must be one of score, rrf"):
        SQLiteHybridAdapter(embedder=hashing, fusion="max")


def test_sqlite_hybrid_with_rrf_fuses_bm25_and_chunk_rankings_k60(hashing: Any) -> None:
    adapter = _filled(SQLiteHybridAdapter, embedder=hashing, fusion="rrf")
    results = adapter.search("bearing", None, 4)
    keyword = [hit.ref_id for hit in adapter.rank("bearing", None, 12)]
    similarities = adapter._chunks.similarities(adapter._chunks.query_vector("bearing"))
    semantic = [hit.ref_id for hit in adapter._chunks.rank_episodes(similarities, 12, adapter._chunks.live_rows())]
    for result in results:
        expected = sum(1 / (60 + ranking.index(result.ref_id) + 1) for ranking in (keyword, semantic) if result.ref_id in ranking)
        assert result.score == pytest.approx(expected, abs=1e-6)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_cognis_boosts_the_named_day(hashing: Any) -> None:
    adapter = _filled(CognisHybridAdapter, embedder=hashing)
    plain = [r.ref_id for r in adapter.search("pump seven vibration", None, 4)]
    dated = [r.ref_id for r in adapter.search("pump seven vibration on January 4th", None, 4)]
    assert plain[0] != "ep4"
    assert dated[0] == "ep4"
    current = [r.ref_id for r in adapter.search("current pump seven vibration", None, 4)]
    assert current.index("ep4") < plain.index("ep4")  # "current" points at the newest episode of the stream


def test_cognis_drops_near_duplicates_that_sqlite_hybrid_keeps(hashing: Any) -> None:
    text = "## 2024-01-05 Log\n### Pumps\n- pump seven vibration rising sharply\n### Notes\n- ordered bearing kit"
    results = {}
    for cls in (CognisHybridAdapter, SQLiteHybridAdapter):
        adapter = _filled(cls, embedder=hashing)
        adapter.ingest("copy-a", "scope", "2024-01-05T10:00:00", text)
        adapter.ingest("copy-b", "scope", "2024-01-05T11:00:00", text)
        results[cls] = [r.ref_id for r in adapter.search("pump seven vibration rising sharply ordered bearing kit", None, 10)]
    assert len({"copy-a", "copy-b"} & set(results[CognisHybridAdapter])) == 1
    assert {"copy-a", "copy-b"} <= set(results[SQLiteHybridAdapter])


def test_cognis_two_stage_search_reranks_a_truncated_shortlist(hashing: Any) -> None:
    adapter = _filled(CognisHybridAdapter, embedder=hashing, shortlist_dim=16, shortlist_size=2, similarity_threshold=0.0)
    adapter.search("pump", None, 3)
    assert adapter._short.shape == (len(adapter._chunks.matrix), 16)
    rows = adapter._vector_ranking(adapter._chunks.query_vector("pump seven bearing"), adapter._chunks.live_rows(), 10)
    assert len(rows) == 2  # only the shortlist survives to the full-dimension rerank
    full = adapter._chunks.matrix.vectors @ adapter._chunks.query_vector("pump seven bearing")
    assert full[rows[0]] >= full[rows[1]]


def test_bm25_ranking_with_and_without_snippets_and_dates(tmp_path: Path) -> None:
    from lens_fixtures.adapters.bm25 import BM25Adapter

    adapter = _filled(BM25Adapter, storage_dir=str(tmp_path))
    hits = adapter.rank("bearing vibration", None, 3)
    assert {hit.ref_id for hit in hits[:2]} == {"ep2", "ep4"}  # both words beat one (ep1)
    assert hits[2].ref_id == "ep1"
    assert hits[0].score >= hits[1].score > hits[2].score
    assert all("bearing" in hit.snippet or "vibration" in hit.snippet for hit in hits)
    bare = adapter.rank("bearing vibration", None, 3, snippets=False)
    assert [hit.ref_id for hit in bare] == [hit.ref_id for hit in hits]
    assert all(hit.snippet == "" for hit in bare)
    assert adapter.keyword_snippets("bearing vibration", bare[:1]) == {bare[0].ref_id: hits[0].snippet}
    dated = adapter.rank("pump", {"start_date": "2024-01-02", "end_date": "2024-01-03"}, 10)
    assert [hit.ref_id for hit in dated] == ["ep2"]
    assert adapter.rank("the of and", None, 3) == []  # nothing but stopwords


def test_scratch_databases_live_under_storage_dir_without_fsync(tmp_path: Path) -> None:
    from lens_fixtures.adapters.storage import scratch_database

    db = scratch_database(str(tmp_path), "probe")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 0
    assert [path.name.startswith("probe-") for path in tmp_path.glob("*.db")] == [True]
    assert scratch_database(None, "memory").execute("PRAGMA database_list").fetchone()[2] == ""


def test_embedding_with_max_pooling_is_the_hybrids_dense_leg_alone(hashing: Any) -> None:
    dense = _filled(EmbeddingAdapter, embedder=hashing, pooling="max", max_chunk_words=150, min_chunk_words=60)
    hybrid = _filled(SQLiteHybridAdapter, embedder=hashing)
    leg = hybrid._chunks.best_chunks(hybrid._chunks.similarities(hybrid._chunks.query_vector("bearing kit")))
    expected = [ref for _, ref in sorted(zip((-leg.scores).tolist(), leg.refs, strict=True), key=lambda pair: pair[0])]
    found = dense.search("bearing kit", None, 4)
    assert [hit.ref_id for hit in found] == expected[:4]
    assert [hit.score for hit in found] == pytest.approx(sorted(leg.scores.tolist(), reverse=True)[:4], abs=1e-6)
    with pytest.raises(ValueError, match="pooling must be one of mean, none, max"):
        EmbeddingAdapter(embedder=hashing, pooling="sum")
