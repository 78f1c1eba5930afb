"""Building an adapter's embedder from its constructor options."""

from __future__ import annotations

from pathlib import Path

from pytest_lens.embedding.base import Embedder
from pytest_lens.embedding.cache import CACHE_FILE, CachedEmbedder, EmbeddingCache, default_cache_dir
from pytest_lens.embedding.endpoint import OpenAIEmbedder
from pytest_lens.embedding.sentence import SentenceTransformerEmbedder

__all__ = ["build_embedder"]


def build_embedder(
    *,
    embedder: Embedder | None = None,
    model: str | None = None,
    base_url: str | None = None,
    batch_size: int | None = None,
    cache: bool = True,
    cache_dir: str | Path | None = None,
) -> CachedEmbedder:
    """The embedder an adapter's options describe, behind the on-disk cache.

    - ``embedder``: a ready :class:`Embedder` (from Python code); wins over the rest.
    - ``base_url``: an OpenAI-compatible endpoint; ``model`` then names its model.
    - otherwise ``model`` is a local sentence-transformers model (default: the bundled MiniLM).
    - ``cache=False`` disables the cache; ``cache_dir`` moves it (default :func:`default_cache_dir`).
    """
    if embedder is None:
        if base_url:
            if not model:
                raise ValueError("embedding_base_url needs embedding_model, the endpoint's model name")
            embedder = OpenAIEmbedder(model, base_url, batch_size=batch_size or 64)
        else:
            embedder = SentenceTransformerEmbedder(model, batch_size=batch_size or 32)
    elif not isinstance(embedder, Embedder):
        raise TypeError(f"embedder must have model_id and encode(texts), got {type(embedder).__name__}")
    store = EmbeddingCache(Path(cache_dir or default_cache_dir()) / CACHE_FILE) if cache else None
    return CachedEmbedder(embedder, store)
