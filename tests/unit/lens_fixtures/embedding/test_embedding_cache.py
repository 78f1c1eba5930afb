from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_lens.embedding import CachedEmbedder, EmbeddingCache, build_embedder, default_cache_dir, text_digest


def test_vectors_round_trip_as_float32_blobs_per_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    vector = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    cache.put_many("m1", [(text_digest("hello"), vector)])
    found = cache.get_many("m1", [text_digest("hello"), text_digest("absent")])
    assert list(found) == [text_digest("hello")]
    assert found[text_digest("hello")].dtype == np.float32
    np.testing.assert_array_equal(found[text_digest("hello")], vector)
    assert cache.get_many("m2", [text_digest("hello")]) == {}  # keyed by model too
    row = sqlite3.connect(tmp_path / "e.sqlite").execute("SELECT model, dim, length(vector) FROM embeddings").fetchone()
    assert row == ("m1", 3, 12)


def test_first_writer_wins_and_wal_mode_is_on(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m", [("d", np.ones(2, dtype=np.float32))])
    cache.put_many("m", [("d", np.zeros(2, dtype=np.float32))])
    np.testing.assert_array_equal(cache.get_many("m", ["d"])["d"], np.ones(2))
    assert cache.count("m") == 1
    assert sqlite3.connect(tmp_path / "e.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cached_embedder_encodes_only_misses_and_counts(tmp_path: Path, hashing: Any) -> None:
    embedder = CachedEmbedder(hashing, EmbeddingCache(tmp_path / "e.sqlite"))
    first = embedder.encode(["a b", "c d", "a b"])
    assert hashing.calls == [["a b", "c d"]]  # duplicates within a call are encoded once
    assert (embedder.stats.hits, embedder.stats.misses) == (1, 2)
    second = embedder.encode(["c d", "e f"])
    assert hashing.calls[-1] == ["e f"]
    assert (embedder.stats.hits, embedder.stats.misses) == (2, 3)
    np.testing.assert_array_equal(first[1], second[0])
    assert embedder.stats.as_counters()["embed_cache_hits"] == 2


def test_a_warm_cache_never_touches_the_model(tmp_path: Path, make_hashing: Any) -> None:
    cold_model = make_hashing()
    CachedEmbedder(cold_model, EmbeddingCache(tmp_path / "e.sqlite")).encode(["x y", "z"])
    warm_model = make_hashing()
    warm = CachedEmbedder(warm_model, EmbeddingCache(tmp_path / "e.sqlite"))
    vectors = warm.encode(["z", "x y"])
    assert warm_model.calls == []
    assert vectors.shape == (2, 64)
    assert (warm.stats.hits, warm.stats.misses) == (2, 0)
    assert warm.dimension == 64
    assert warm_model.calls == []


def test_without_a_cache_every_call_encodes(hashing: Any) -> None:
    embedder = CachedEmbedder(hashing, None)
    embedder.encode(["a"])
    embedder.encode(["a"])
    assert hashing.texts_encoded == 2
    assert embedder.stats.hits == 0


def test_default_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "lens"))
    assert default_cache_dir() == tmp_path / "lens"
    monkeypatch.delenv("LENS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "pytest-lens"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "pytest-lens"


def test_build_embedder_honours_cache_options(tmp_path: Path, hashing: Any, isolated_cache: Path) -> None:
    assert build_embedder(embedder=hashing, cache=False).cache is None
    moved = build_embedder(embedder=hashing, cache_dir=str(tmp_path / "elsewhere"))
    assert moved.cache is not None
    assert moved.cache.path == tmp_path / "elsewhere" / "embeddings.sqlite"
    default = build_embedder(embedder=hashing)
    assert default.cache is not None
    assert default.cache.path == isolated_cache / "embeddings.sqlite"


def test_an_unusable_cache_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(RuntimeError, match=r"cannot open the embedding cache at .*file.*cache=false"):
        EmbeddingCache(blocker / "sub" / "embeddings.sqlite")


_WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from pytest_lens.embedding import CachedEmbedder, EmbeddingCache, normalize_rows

    class Counting:
        model_id = "test:proc"
        def encode(self, texts):
            return normalize_rows(np.array([[len(t), sum(map(ord, t)) % 97, 1.0] for t in texts], dtype=np.float32))

    path, worker = sys.argv[1], int(sys.argv[2])
    embedder = CachedEmbedder(Counting(), EmbeddingCache(path))
    # Overlapping texts, written in many small transactions, to make the processes contend.
    for start in range(0, 200, 5):
        embedder.encode([f"text {i}" for i in range(start + worker * 50, start + worker * 50 + 5)])
    print(embedder.stats.hits, embedder.stats.misses)
    """
)


def test_several_processes_write_one_cache_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(worker)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for worker in range(4)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0], [err for _, err in outputs]
    cache = EmbeddingCache(path)
    assert cache.count("test:proc") == 350  # texts 0..349, each stored once
    stored = cache.get_many("test:proc", [text_digest("text 123")])
    expected = np.array([8, sum(map(ord, "text 123")) % 97, 1.0], dtype=np.float32)
    np.testing.assert_allclose(stored[text_digest("text 123")], expected / np.linalg.norm(expected), rtol=1e-6)
    # A later process finds everything: hits across processes, no encoding.
    rerun = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), "1"], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert rerun.stdout.split() == ["200", "0"]


@pytest.mark.parametrize(
    "poison",
    [np.full(64, np.nan, dtype=np.float32).tobytes(), np.zeros(64, dtype=np.float32).tobytes(), b"\x00\x01\x02"],
    ids=["nan", "zero", "torn"],
)
def test_poisoned_cached_vectors_are_detected_recomputed_and_reported(tmp_path: Path, make_hashing: Any, poison: bytes) -> None:
    # Issue 32, defect 7: NaN vectors in the cache turned a 0.878 headline into 0.000 with no fault and no warning.
    from pytest_lens.embedding.cache import EmbeddingCacheWarning

    path = tmp_path / "e.sqlite"
    honest = CachedEmbedder(make_hashing(), EmbeddingCache(path)).encode(["freezer FR-3 warming", "forklift charging"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE embeddings SET vector = ? WHERE digest = ?", [poison, text_digest("freezer FR-3 warming")])
    model = make_hashing()
    embedder = CachedEmbedder(model, EmbeddingCache(path))
    with pytest.warns(
        EmbeddingCacheWarning, match=r"1 unusable vector\(s\) of test:hashing:64 \(NaN, zero or torn\) ignored and recomputed"
    ):
        again = embedder.encode(["freezer FR-3 warming", "forklift charging"])
    np.testing.assert_array_equal(again, honest)
    assert model.calls == [["freezer FR-3 warming"]]  # only the poisoned entry was recomputed
    assert embedder.stats.as_counters()["embed_cache_corrupted"] == 1
    # ... and overwritten: the next process reads the good vector from the cache.
    fresh_model = make_hashing()
    np.testing.assert_array_equal(CachedEmbedder(fresh_model, EmbeddingCache(path)).encode(["freezer FR-3 warming"])[0], honest[0])
    assert fresh_model.calls == []


def test_an_embedder_returning_nan_is_an_error_and_nothing_is_cached(tmp_path: Path) -> None:
    from pytest_lens.embedding import Vectors

    class Broken:
        model_id = "test:broken"

        def encode(self, texts: list[str]) -> Vectors:
            return np.full((len(texts), 4), np.nan, dtype=np.float32)

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with pytest.raises(ValueError, match="embedder test:broken returned vectors with NaN or infinite components"):
        CachedEmbedder(Broken(), cache).encode(["a"])
    assert cache.count() == 0
