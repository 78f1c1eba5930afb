"""``--lens-adapter=llamaindex:module:factory``: a LlamaIndex ``VectorStoreIndex``, no adapter code.

The factory is called once per scope with the keywords it accepts among ``embed_model`` (pytest-lens's
embedder as a LlamaIndex ``BaseEmbedding``: the offline MiniLM by default, through the shared cache),
and ``storage_dir`` (a fresh directory per scope), and returns a ``VectorStoreIndex`` (e.g.
``VectorStoreIndex([], embed_model=embed_model)``, or one over a persistent vector store).

The mapping:

- an episode is one ``TextNode``: ``id_`` a UUID made from the episode id (``store_id``: vector stores such as
  Qdrant take no other string), ``text`` the episode's text, metadata ``lens_ref``,
  ``timestamp``, ``lens_day`` (20240131), ``lens_scope`` and the episode's ``meta`` (flattened to scalars),
  every metadata key excluded from the embedded and the LLM text (the vector is the episode's text alone);
  inserted in batches with ``insert_nodes`` before any search;
- ``search`` is ``as_retriever(similarity_top_k=k, filters=...).retrieve(query)``: ``NodeWithScore`` list in the
  vector store's order, never re-sorted, the node's score as the result's (a distance shown as ``1 / (1 + d)``);
  date filters are ``MetadataFilters`` on ``lens_day`` (GTE/LTE), which LlamaIndex's vector stores apply
  themselves (``date_filter=false`` for a store that cannot);
- ``retrieve`` is the index's docstore (``get_node``), else its vector store's ``get_nodes``.
"""

from __future__ import annotations

from typing import Any

from lens_fixtures.adapters.interfaces.base import (
    REF_KEY,
    EmbeddingFactoryAdapter,
    day_bounds,
    episode_metadata,
    ranked_results,
    store_id,
)
from lens_fixtures.adapters.interfaces.embedders import llamaindex_embedding
from pytest_lens import CapabilityManifest, Document, SearchResult

__all__ = ["LlamaIndexAdapter"]


class LlamaIndexAdapter(EmbeddingFactoryAdapter):
    """A LlamaIndex ``VectorStoreIndex`` from the user's factory, one per scope.

    Options: ``date_filter`` (true: pass ``start_date``/``end_date`` as metadata filters), the embedder's
    (``embedding_model``, ``embedding_base_url``, ``embedding_batch_size``, ``cache``, ``cache_dir``),
    ``snippet_chars`` (600), ``max_results`` (20), ``batch_size`` (32 nodes per ``insert_nodes``).
    """

    scheme = "llamaindex"
    library_extra = "llamaindex"

    def setup(self) -> None:
        """The embedder as a LlamaIndex ``BaseEmbedding``; no index yet."""
        self._embed_model = llamaindex_embedding(self._embedder)
        self._index: Any = None

    def offered(self) -> dict[str, Any]:
        """``embed_model``: the embedder as a LlamaIndex ``BaseEmbedding``."""
        return {"embed_model": self._embed_model}

    def adopt(self, made: Any) -> None:
        """A ``VectorStoreIndex``."""
        from llama_index.core import VectorStoreIndex

        if not isinstance(made, VectorStoreIndex):
            raise TypeError(f"factory {self.target()} returned {type(made).__name__}: expected a llama_index VectorStoreIndex")
        self._index = made
        self.adopted()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Queue the episode's node; a full batch is inserted."""
        from llama_index.core.schema import TextNode

        metadata = episode_metadata(episode_id, scope_id, timestamp, meta)
        keys = list(metadata)
        self.queue(
            TextNode(
                id_=store_id(episode_id), text=text, metadata=metadata, excluded_embed_metadata_keys=keys, excluded_llm_metadata_keys=keys
            )
        )

    def write(self, nodes: list[Any]) -> None:
        """One batch, in one call."""
        self._index.insert_nodes(nodes)

    def _filters(self, filters: dict[str, Any] | None) -> Any:
        start, end = day_bounds(filters)
        if not self._date_filter or (start is None and end is None):
            return None
        from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

        bounds = [(FilterOperator.GTE, start), (FilterOperator.LTE, end)]
        return MetadataFilters(
            filters=[MetadataFilter(key="lens_day", operator=op, value=value) for op, value in bounds if value is not None]
        )

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The index retriever's nodes in the vector store's order, one per episode."""
        if not query.strip():
            return []
        self.ready()
        k = self.limit(limit)
        retriever = self._index.as_retriever(similarity_top_k=k, filters=self._filters(filters))
        hits = retriever.retrieve(query)
        return ranked_results(
            (
                (_ref(hit.node), self.snippet(hit.node.get_content()), hit.score, {"timestamp": hit.node.metadata.get("timestamp", "")})
                for hit in hits
            ),
            k,
            self.scores,
        )

    def lens_store_ranking(self, query: str, limit: int | None = None) -> list[str]:
        """The refs the index's vector store itself ranks for ``query`` (its ``query``), in its order.

        The conformance clause ``search.store_order`` holds :meth:`search` to this order.
        """
        from llama_index.core.vector_stores import VectorStoreQuery

        self.ready()
        found = self._index.vector_store.query(
            VectorStoreQuery(query_embedding=self._embed_model.get_query_embedding(query), similarity_top_k=self.limit(limit))
        )
        if found.nodes:
            return [_ref(node) for node in found.nodes]
        docstore = self._index.docstore
        return [_ref(docstore.get_node(node_id)) for node_id in found.ids or []]

    def retrieve(self, ref_id: str) -> Document | None:
        """The node stored under the episode id: from the docstore, else from the vector store."""
        self.ready()
        stored = store_id(ref_id)
        node = self._index.docstore.get_node(stored, raise_error=False)
        if node is None and getattr(self._index.vector_store, "stores_text", False):
            try:
                found = self._index.vector_store.get_nodes(node_ids=[stored])
            except (NotImplementedError, KeyError, ValueError):
                found = []
            node = next((item for item in found if item.node_id == stored), None)
        if node is None or _ref(node) != ref_id:
            return None
        return Document(ref_id=ref_id, text=node.get_content(), metadata={"timestamp": node.metadata.get("timestamp", "")})

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search; a date range unless ``date_filter`` is off."""
        return CapabilityManifest(
            search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=self._date_filter
        )

    def drop(self) -> None:
        """Let go of the index."""
        self._index = None


def _ref(node: Any) -> str:
    return str(node.metadata.get(REF_KEY) or node.node_id)
