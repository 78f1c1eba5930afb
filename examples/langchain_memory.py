"""LangChain vector stores as the memory under test: no adapter code, only a factory.

    pytest -m lens --lens-adapter=langchain:examples.langchain_memory:make_store
    pytest -m lens --lens-adapter=chroma=langchain:examples.langchain_memory:make_chroma_store
    pytest -m lens --lens-adapter=faiss=langchain:examples.langchain_memory:make_faiss_ip_store

pytest-lens calls the factory once per scope (every scope starts from an empty store) with the keywords it
names: ``embeddings`` (the offline MiniLM as LangChain ``Embeddings``, through pytest-lens's embedding cache)
and ``storage_dir`` (a fresh directory for this scope). Your own store goes here: the factory returns any
``VectorStore`` that implements ``get_by_ids``, or ``store.as_retriever()``. Each store below is built as its
own documentation builds it; what each needs is in the docstring.
"""

from __future__ import annotations

import functools
import hashlib
import os
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


def _faiss(embeddings: Embeddings, inner_product: bool) -> Any:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS
    from langchain_community.vectorstores.utils import DistanceStrategy

    dimensions = len(embeddings.embed_query("dimensions"))
    if not inner_product:
        return FAISS(embeddings, faiss.IndexFlatL2(dimensions), InMemoryDocstore(), {})
    return FAISS(
        embedding_function=embeddings,
        index=faiss.IndexFlatIP(dimensions),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
        distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
        normalize_L2=True,
    )


def make_faiss_store(embeddings: Embeddings) -> Any:
    """FAISS, exact L2 search (``pip install faiss-cpu langchain-community``)."""
    return _faiss(embeddings, inner_product=False)


def make_faiss_ip_store(embeddings: Embeddings) -> Any:
    """FAISS over inner products of normalised vectors: ranks as cosine similarity does (``faiss-cpu langchain-community``)."""
    return _faiss(embeddings, inner_product=True)


def make_qdrant_store(embeddings: Embeddings) -> Any:
    """Qdrant in local mode, in memory, cosine distance (``pip install langchain-qdrant``: it brings qdrant-client)."""
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    client = QdrantClient(":memory:")
    dimensions = len(embeddings.embed_query("dimensions"))
    client.create_collection(collection_name="lens", vectors_config=VectorParams(size=dimensions, distance=Distance.COSINE))
    return QdrantVectorStore(client=client, collection_name="lens", embedding=embeddings)


@functools.cache
def _pg_engine(url: str) -> Any:
    from langchain_postgres import PGEngine

    return PGEngine.from_connection_string(url=url)


def make_pgvector_store(embeddings: Embeddings, storage_dir: str) -> Any:
    """The pgvector extension through ``PGVectorStore`` (``pip install langchain-postgres 'psycopg[binary]'``), cosine distance.

    The server is yours: a PostgreSQL with the ``vector`` extension created, its SQLAlchemy URL in
    ``LENS_PGVECTOR_URL`` (``postgresql+psycopg://USER@HOST/DB``). Each scope gets a table of its own, named from
    its storage directory, so scopes and parallel runs never share one; one engine (connection pool) serves them.
    """
    from langchain_postgres import PGVectorStore

    url = os.environ.get("LENS_PGVECTOR_URL", "")
    if not url:
        raise RuntimeError("make_pgvector_store needs LENS_PGVECTOR_URL: the SQLAlchemy URL of a PostgreSQL with pgvector")
    engine = _pg_engine(url)
    table = "lens_" + hashlib.sha256(storage_dir.encode()).hexdigest()[:16]
    engine.init_vectorstore_table(table_name=table, vector_size=len(embeddings.embed_query("dimensions")))
    return PGVectorStore.create_sync(engine=engine, table_name=table, embedding_service=embeddings)
