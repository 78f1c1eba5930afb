"""Constructor options shared by the embedding-backed reference adapters."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_lens.embedding import CachedEmbedder, Embedder, build_embedder

__all__ = ["embedder_from_options", "embedding_extras"]


def embedding_extras(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The extra the embedder these options choose needs (an adapter's ``lens_extras``, checked at start-up).

    An embedding endpoint (``embedding_base_url``) needs the openai client (``llm``); otherwise the offline model
    (``embeddings``). An embedder object given in code needs neither.
    """
    if options.get("embedder") is not None:
        return ()
    return ("llm",) if options.get("embedding_base_url") else ("embeddings",)


def embedder_from_options(
    *,
    embedder: Embedder | None,
    embedding_model: str | None,
    embedding_base_url: str | None,
    embedding_batch_size: int | None,
    cache: bool,
    cache_dir: str | Path | None,
) -> CachedEmbedder:
    """Check the options' types (they often come from the command line) and build the cached embedder."""
    if not isinstance(cache, bool):
        raise TypeError(f"option cache must be true or false, got {cache!r}")
    for name, value in (("embedding_model", embedding_model), ("embedding_base_url", embedding_base_url)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"option {name} must be a string, got {value!r}")
    if cache_dir is not None and not isinstance(cache_dir, str | Path):
        raise TypeError(f"option cache_dir must be a directory path, got {cache_dir!r}")
    if embedding_batch_size is not None and (
        isinstance(embedding_batch_size, bool) or not isinstance(embedding_batch_size, int) or embedding_batch_size < 1
    ):
        raise ValueError(f"option embedding_batch_size must be a positive integer, got {embedding_batch_size!r}")
    return build_embedder(
        embedder=embedder,
        model=embedding_model,
        base_url=embedding_base_url,
        batch_size=embedding_batch_size,
        cache=cache,
        cache_dir=cache_dir,
    )
