"""Factories for the interface adapters' tests: real library stores, and one that silently loses data."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore


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
