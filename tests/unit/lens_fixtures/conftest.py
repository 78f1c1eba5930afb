"""Fixtures for the reference adapters' unit tests: an isolated embedding cache, the real MiniLM, a fast hashing embedder."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from pytest_lens.embedding import CACHE_DIR_ENV, SentenceTransformerEmbedder, Vectors, normalize_rows


class HashingEmbedder:
    """A real, deterministic embedder: hashed word counts in 64 dimensions. Counts its calls and texts."""

    def __init__(self, dimension: int = 64, name: str = "hashing") -> None:
        self.dimension = dimension
        self.name = name
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return f"test:{self.name}:{self.dimension}"

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                matrix[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return normalize_rows(matrix)

    @property
    def texts_encoded(self) -> int:
        return sum(len(call) for call in self.calls)


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache directory for session- and module-scoped fixtures; nothing touches ~/.cache."""
    path = tmp_path_factory.mktemp("lens-cache-session")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_DIR_ENV, str(path))
        yield path


@pytest.fixture(autouse=True)
def isolated_cache(session_cache: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own embedding cache directory."""
    path = tmp_path_factory.mktemp("lens-cache")
    monkeypatch.setenv(CACHE_DIR_ENV, str(path))
    return path


@pytest.fixture
def hashing() -> HashingEmbedder:
    """A fresh hashing embedder (inspect ``.calls`` to see what was encoded)."""
    return HashingEmbedder()


@pytest.fixture
def make_hashing() -> type[HashingEmbedder]:
    """The hashing embedder class, for tests that need several."""
    return HashingEmbedder


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The bundled MiniLM; the process loads it once, whichever test encodes first."""
    return SentenceTransformerEmbedder()
