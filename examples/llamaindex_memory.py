"""A LlamaIndex ``VectorStoreIndex`` as the memory under test: no adapter code, only a factory.

    pytest -m lens --lens-adapter=llamaindex:examples.llamaindex_memory:make_index

The factory is called once per scope with the keywords it names: ``embed_model`` (the offline MiniLM as a
LlamaIndex ``BaseEmbedding``, through pytest-lens's embedding cache) and ``storage_dir``. Build
your index over your own vector store here (``StorageContext.from_defaults(vector_store=...)``).
"""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding


def make_index(embed_model: BaseEmbedding) -> VectorStoreIndex:
    return VectorStoreIndex([], embed_model=embed_model)
