"""Factories for the interface adapters' tests: real library stores, one that silently loses data, and the old re-sort."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from lens_fixtures.adapters.interfaces.base import REF_KEY
from lens_fixtures.adapters.interfaces.langchain import LangChainAdapter
from pytest_lens import SearchResult


def in_memory(embeddings: Embeddings) -> InMemoryVectorStore:
    """LangChain's own in-memory vector store."""
    return InMemoryVectorStore(embeddings)


def in_memory_retriever(embeddings: Embeddings) -> Any:
    """A retriever over the in-memory store (``as_retriever``): searched through ``invoke``, scored by rank."""
    return InMemoryVectorStore(embeddings).as_retriever()


class LossyStore(InMemoryVectorStore):
    """An in-memory store that silently drops every second document added to it."""

    def __init__(self, embeddings: Embeddings) -> None:
        super().__init__(embeddings)
        self.added = 0

    def add_documents(self, documents: list[Document], ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        kept, kept_ids = [], []
        for position, document in enumerate(documents):
            self.added += 1
            if self.added % 2 == 1:
                kept.append(document)
                kept_ids.append(ids[position] if ids else document.id)
        if kept:
            super().add_documents(kept, ids=kept_ids, **kwargs)
        return list(ids or [])


def lossy(embeddings: Embeddings) -> LossyStore:
    """The lossy store: a mapping that loses data must fail conformance."""
    return LossyStore(embeddings)


MEMORY_SERVER_VERSION = "2026.8.31"  # not callable: refused as a factory
#: The keywords ``counting`` was called with, one dict per call.
CALLS: list[dict[str, Any]] = []


def counting(embeddings: Embeddings, storage_dir: str) -> InMemoryVectorStore:
    """An in-memory store that records each call (the factory must be called once per scope)."""
    CALLS.append({"storage_dir": storage_dir})
    return InMemoryVectorStore(embeddings)


def not_a_store() -> dict[str, str]:
    return {}


def needs_a_client(embeddings: Embeddings, client: object) -> InMemoryVectorStore:
    return InMemoryVectorStore(embeddings)


def old_ranked_results(hits: Iterable[tuple[str, str, float | None, Mapping[str, Any]]], limit: int) -> list[SearchResult]:
    """``ranked_results`` as it was before issue 42: the store's hits re-sorted by the score LangChain gave them."""
    scored = []
    for rank, (ref, text, score, metadata) in enumerate(hits):
        value = 1.0 / (1 + rank) if score is None else float(score)
        scored.append((ref, text, value, dict(metadata)))
    scored.sort(key=lambda hit: -hit[2])
    results: list[SearchResult] = []
    seen: set[str] = set()
    for ref, text, value, metadata in scored:
        if ref in seen:
            continue
        seen.add(ref)
        results.append(SearchResult(ref_id=ref, text=text, score=round(value, 6), metadata=metadata))
        if len(results) == limit:
            break
    return results


class ResortedByRelevance(LangChainAdapter.lens_bind("examples.langchain_memory:make_faiss_ip_store")):  # type: ignore[misc]
    """The LangChain adapter's search before issue 42 (relevance scores, then re-sorted), over FAISS with inner products.

    LangChain's relevance function for that configuration is ``1 - similarity``: the re-sort turns the store's
    ranking upside down. ``search.store_order`` must fail it.
    """

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        if not query.strip():
            return []
        self.ready()
        k = self.limit(limit)
        hits = self._store.similarity_search_with_relevance_scores(query, k=k)
        return old_ranked_results(((d.metadata[REF_KEY], d.page_content, score, {}) for d, score in hits), k)
