"""A LangChain vector store as the memory under test: no adapter code, only a factory.

    pytest -m lens --lens-adapter=langchain:examples.langchain_memory:make_store
    pytest -m lens --lens-adapter=chroma=langchain:examples.langchain_memory:make_chroma_store

pytest-lens calls the factory once per scope (every scope starts from an empty store) with the keywords it
names: ``embeddings`` (the offline MiniLM as LangChain ``Embeddings``, through pytest-lens's embedding cache),
``storage_dir`` (a fresh directory for this scope) and ``scope_id``. Your own store goes here: the factory
returns any ``VectorStore`` that implements ``get_by_ids``, or ``store.as_retriever()``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore


def make_store(embeddings: Embeddings) -> InMemoryVectorStore:
    return InMemoryVectorStore(embeddings)


def make_chroma_store(embeddings: Embeddings, storage_dir: str) -> Any:
    """A persistent Chroma collection in this scope's directory (``pip install langchain-chroma``), cosine distance."""
    from langchain_chroma import Chroma

    return Chroma(
        collection_name="lens", embedding_function=embeddings, persist_directory=storage_dir, collection_metadata={"hnsw:space": "cosine"}
    )
