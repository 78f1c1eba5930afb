"""The offline MiniLM (through the shared embedding cache), as each library's own embedding interface wants it.

Each function imports its library when called: selecting one interface never imports another's library.
"""

from __future__ import annotations

from typing import Any

from pytest_lens.embedding import CachedEmbedder

__all__ = ["langchain_embeddings", "langgraph_index", "llamaindex_embedding"]


def _vectors(embedder: CachedEmbedder, texts: list[str]) -> list[list[float]]:
    if not texts:
        return []
    return [[float(x) for x in row] for row in embedder.encode(texts)]


def langchain_embeddings(embedder: CachedEmbedder) -> Any:
    """A ``langchain_core.embeddings.Embeddings`` over ``embedder``."""
    from langchain_core.embeddings import Embeddings

    class LensEmbeddings(Embeddings):
        """pytest-lens's embedder (the offline MiniLM by default), as LangChain ``Embeddings``."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _vectors(embedder, list(texts))

        def embed_query(self, text: str) -> list[float]:
            return _vectors(embedder, [text])[0]

    return LensEmbeddings()


def llamaindex_embedding(embedder: CachedEmbedder) -> Any:
    """A ``llama_index.core.embeddings.BaseEmbedding`` over ``embedder``."""
    from llama_index.core.embeddings import BaseEmbedding

    class LensEmbedding(BaseEmbedding):
        """pytest-lens's embedder (the offline MiniLM by default), as a LlamaIndex embedding model."""

        def _get_query_embedding(self, query: str) -> list[float]:
            return _vectors(embedder, [query])[0]

        def _get_text_embedding(self, text: str) -> list[float]:
            return _vectors(embedder, [text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return _vectors(embedder, list(texts))

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return LensEmbedding(model_name=embedder.model_id, embed_batch_size=64)


def langgraph_index(embedder: CachedEmbedder, fields: list[str]) -> dict[str, Any]:
    """A LangGraph store ``index`` config (``dims``, ``embed``, ``fields``) over ``embedder``."""
    dims = embedder.dimension

    def embed(texts: list[str]) -> list[list[float]]:
        return _vectors(embedder, list(texts))

    return {"dims": dims, "embed": embed, "fields": fields}
