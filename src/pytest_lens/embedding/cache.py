"""An on-disk embedding cache shared by processes, and the embedder wrapper that uses it.

A rerun over unchanged episodes (the usual CI case: same dataset, new
memory-system code) finds every vector here and never loads the model.
Entries are keyed by ``(model id, sha256(text))`` and hold float32 blobs;
SQLite in WAL mode with a busy timeout lets several xdist workers read and
write the same file at once.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_lens.embedding.base import Embedder, Vectors
from pytest_lens.llm.cache import use_wal
from pytest_lens.progress import report_embeddings

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_FILE",
    "CacheStats",
    "CachedEmbedder",
    "EmbeddingCache",
    "EmbeddingCacheWarning",
    "default_cache_dir",
    "text_digest",
    "usable_vector",
]

#: Environment variable naming the cache directory (default ``~/.cache/pytest-lens``).
CACHE_DIR_ENV = "LENS_CACHE_DIR"
CACHE_FILE = "embeddings.sqlite"
_BUSY_TIMEOUT_MS = 60_000
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit
#: Texts per encode call: large enough to batch well, small enough to report progress every few seconds.
_ENCODE_CHUNK = 128


def default_cache_dir() -> Path:
    """``$LENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-lens``, else ``~/.cache/pytest-lens``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "pytest-lens"


def usable_vector(vector: Vectors) -> bool:
    """A vector the cache may hold and hand out: every component finite, and not all zero.

    Embedders return normalised rows; a NaN row or a zero row (a tampered or half-written cache, a broken
    endpoint) would score every similarity as NaN or 0 and turn a run's headline into 0.000 without a fault.
    """
    return bool(np.isfinite(vector).all()) and bool(np.any(vector))


def text_digest(text: str) -> str:
    """The cache key of a text: hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCacheWarning(UserWarning):
    """Cached vectors were unusable (NaN, zero or torn) and were recomputed."""


class EmbeddingCache:
    """Vectors by ``(model_id, text digest)`` in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            self._db = connection
            use_wal(self._db, _BUSY_TIMEOUT_MS / 1000)
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute(
                """CREATE TABLE IF NOT EXISTS embeddings (
                       model TEXT NOT NULL, digest TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,
                       PRIMARY KEY (model, digest)) WITHOUT ROWID"""
            )
        except (OSError, sqlite3.Error) as exc:
            raise RuntimeError(
                f"cannot open the embedding cache at {self.path}: {type(exc).__name__}: {exc} "
                f"(set {CACHE_DIR_ENV} or the adapter option cache_dir to another directory, or cache=false)"
            ) from exc
        self._lock = threading.Lock()
        #: Entries found unusable and not yet overwritten: (model id, digest).
        self.corrupted: set[tuple[str, str]] = set()

    def get_many(self, model_id: str, digests: Iterable[str]) -> dict[str, Vectors]:
        """The cached vectors among ``digests`` (missing ones are absent), as 1-row-per-vector float32."""
        wanted = list(dict.fromkeys(digests))
        found: dict[str, Vectors] = {}
        with self._lock:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                part = wanted[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT digest, dim, vector FROM embeddings WHERE model = ? AND digest IN ({marks})", [model_id, *part]
                ).fetchall()
                for digest, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32) if isinstance(blob, bytes) and len(blob) % 4 == 0 else None
                    if vector is not None and vector.shape[0] == dim and usable_vector(vector):
                        found[digest] = vector
                    else:  # torn, foreign or poisoned (NaN, zero): a miss, recomputed and overwritten
                        self.corrupted.add((model_id, digest))
        return found

    def put_many(self, model_id: str, items: Sequence[tuple[str, Vectors]]) -> None:
        """Store vectors; an entry another process wrote first is kept (same model and text give the same vector)."""
        if not items:
            return
        # A vector that could never be read back (NaN, zero) is not stored: it would be a miss every time.
        rows = [
            (model_id, digest, int(vector.shape[0]), np.asarray(vector, dtype=np.float32).tobytes())
            for digest, vector in items
            if usable_vector(vector)
        ]
        with self._lock:
            connection = self._db
            connection.execute("BEGIN IMMEDIATE")
            try:
                replaced = [row for row in rows if (model_id, row[1]) in self.corrupted]
                fresh = [row for row in rows if (model_id, row[1]) not in self.corrupted]
                connection.executemany("INSERT OR IGNORE INTO embeddings (model, digest, dim, vector) VALUES (?, ?, ?, ?)", fresh)
                connection.executemany("INSERT OR REPLACE INTO embeddings (model, digest, dim, vector) VALUES (?, ?, ?, ?)", replaced)
                self.corrupted.difference_update((model_id, row[1]) for row in replaced)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def count(self, model_id: str | None = None) -> int:
        """Entries stored (for one model, or all)."""
        with self._lock:
            if model_id is None:
                return int(self._db.execute("SELECT count(*) FROM embeddings").fetchone()[0])
            return int(self._db.execute("SELECT count(*) FROM embeddings WHERE model = ?", [model_id]).fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()


@dataclass
class CacheStats:
    """What an embedder wrapper did: texts served from the cache, texts encoded, time spent encoding."""

    hits: int = 0
    misses: int = 0
    encode_seconds: float = 0.0
    #: Cached vectors found unusable (NaN, zero, torn) and recomputed.
    corrupted: int = 0

    def as_counters(self) -> dict[str, int]:
        """Integer counters for reports (``lens_stats``); ``embed_cache_corrupted`` only when some were."""
        counters = {"embed_cache_hits": self.hits, "embed_cache_misses": self.misses, "embed_ms": round(self.encode_seconds * 1000)}
        return counters | ({"embed_cache_corrupted": self.corrupted} if self.corrupted else {})


class CachedEmbedder:
    """An :class:`Embedder` that asks the cache first and encodes only what is missing.

    With ``cache=None`` it still encodes each distinct text of a call once.
    The wrapped embedder is not touched when every text is cached, so a warm
    run never loads the model.
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None) -> None:
        self.embedder = embedder
        self.cache = cache
        self.stats = CacheStats()
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        """Vector length, found by embedding a fixed probe text (cached like any other text)."""
        if self._dimension is None:
            self._dimension = int(self.encode(["dimension probe"]).shape[1])
        return self._dimension

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Vectors for ``texts`` in order: cached ones looked up, the rest encoded in one batched call and stored."""
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        digests = [text_digest(text) for text in texts]
        known = self.cache.get_many(self.model_id, digests) if self.cache is not None else {}
        if self.cache is not None and (poisoned := sum((self.model_id, d) in self.cache.corrupted for d in set(digests))):
            self.stats.corrupted += poisoned
            warnings.warn(
                EmbeddingCacheWarning(
                    f"embedding cache {self.cache.path}: {poisoned} unusable vector(s) of {self.model_id} "
                    "(NaN, zero or torn) ignored and recomputed"
                ),
                stacklevel=2,
            )
        missing = {digest: text for digest, text in zip(digests, texts, strict=True) if digest not in known}
        report_embeddings(cached=len(texts) - len(missing))
        pending = list(missing.items())
        # Encoded in chunks so that progress is reported while a long list is embedded.
        for start in range(0, len(pending), _ENCODE_CHUNK):
            chunk = pending[start : start + _ENCODE_CHUNK]
            began = time.perf_counter()
            fresh = self.embedder.encode([text for _, text in chunk])
            self.stats.encode_seconds += time.perf_counter() - began
            if fresh.shape[0] != len(chunk):
                raise ValueError(f"embedder {self.model_id} returned {fresh.shape[0]} vectors for {len(chunk)} texts")
            if not np.isfinite(fresh).all():
                raise ValueError(f"embedder {self.model_id} returned vectors with NaN or infinite components")
            computed = {digest: vector for (digest, _), vector in zip(chunk, fresh, strict=True)}
            if self.cache is not None:
                self.cache.put_many(self.model_id, list(computed.items()))
            known.update(computed)
            report_embeddings(new=len(chunk))
        self.stats.misses += len(missing)
        self.stats.hits += len(texts) - len(missing)
        matrix = np.stack([known[digest] for digest in digests]).astype(np.float32, copy=False)
        self._dimension = int(matrix.shape[1])
        return matrix

    def close(self) -> None:
        """Close the cache connection."""
        if self.cache is not None:
            self.cache.close()
