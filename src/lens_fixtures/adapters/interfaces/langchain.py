"""``--lens-adapter=langchain:module:factory``: any LangChain ``VectorStore`` (or a retriever over one), no adapter code.

The factory is called once per scope with the keywords it accepts among ``embeddings`` (pytest-lens's
embedder as LangChain ``Embeddings``: the offline MiniLM by default, through the shared cache) and
``storage_dir`` (a fresh directory per scope, for persistent stores). It returns a
``VectorStore``, or a ``BaseRetriever`` with a ``vectorstore`` (``store.as_retriever()``,
``TimeWeightedVectorStoreRetriever``), which then answers the searches.

The mapping:

- an episode is one ``Document``: ``page_content`` the episode's text, ``id`` a UUID made from the episode id
  (:func:`~lens_fixtures.adapters.interfaces.base.store_id`: Qdrant takes no other string), metadata
  ``lens_ref`` the episode id, metadata ``timestamp``, ``lens_day`` (20240131), ``lens_scope`` and the episode's ``meta``
  (flattened to scalars); added in batches with ``add_documents(ids=...)`` before any search;
- ``search`` is ``similarity_search_with_score``: the store's hits in the store's order, never re-sorted; the
  score shown is the store's similarity, ``1 / (1 + d)`` of a distance ``d``, by rank where the scores do not
  follow the order (:class:`~lens_fixtures.adapters.interfaces.base.StoreScores`); a store without scores
  (``similarity_search``) and a retriever's ``invoke`` are scored by rank; ``retrieve`` is ``get_by_ids``;
- date filters (``start_date``/``end_date``) only where the store's filter language is known: a predicate on
  the ``Document`` for ``InMemoryVectorStore``, a ``where`` dict on ``lens_day`` for Chroma and
  ``PGVectorStore``, a ``Filter`` on ``metadata.lens_day`` for ``QdrantVectorStore`` (``date_filter`` option:
  ``auto``, ``callable``, ``where``, ``qdrant`` or ``none``). Other stores declare no date range.
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
from lens_fixtures.adapters.interfaces.embedders import langchain_embeddings
from pytest_lens import CapabilityManifest, Document, SearchResult

__all__ = ["DATE_FILTERS", "LangChainAdapter"]

#: How a store is asked to filter by day: a predicate on the Document, a Chroma-style where dict, a Qdrant
#: ``Filter`` on the payload's metadata, or not at all.
DATE_FILTERS = ("auto", "callable", "where", "qdrant", "none")
#: Stores whose filter language is known, by class name (auto). FAISS is left out: it filters the ``fetch_k`` (20)
#: nearest after the search, so a date range can miss episodes it holds.
_KNOWN_FILTERS = {"InMemoryVectorStore": "callable", "Chroma": "where", "PGVectorStore": "where", "QdrantVectorStore": "qdrant"}


class LangChainAdapter(EmbeddingFactoryAdapter):
    """A LangChain vector store or retriever from the user's factory, one per scope.

    Options: ``date_filter`` (see the module docstring), the embedder's (``embedding_model``,
    ``embedding_base_url``, ``embedding_batch_size``, ``cache``, ``cache_dir``), ``snippet_chars`` (600),
    ``max_results`` (20), ``batch_size`` (32 documents per ``add_documents``).
    """

    scheme = "langchain"
    library_extra = "langchain"
    default_date_filter = "auto"

    @classmethod
    def check_date_filter(cls, value: Any) -> None:
        """One of :data:`DATE_FILTERS`."""
        if value not in DATE_FILTERS:
            raise ValueError(f"option date_filter must be one of {', '.join(DATE_FILTERS)}, got {value!r}")

    def setup(self) -> None:
        """The embedder as LangChain ``Embeddings``; no store or retriever yet."""
        self._embeddings = langchain_embeddings(self._embedder)
        self._store: Any = None
        self._retriever: Any = None

    def offered(self) -> dict[str, Any]:
        """``embeddings``: the embedder as LangChain ``Embeddings``."""
        return {"embeddings": self._embeddings}

    def adopt(self, made: Any) -> None:
        """A ``VectorStore``, or a ``BaseRetriever`` over one; the store must implement ``get_by_ids``."""
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import VectorStore

        if isinstance(made, VectorStore):
            store, retriever = made, None
        elif isinstance(made, BaseRetriever) and isinstance(getattr(made, "vectorstore", None), VectorStore):
            store, retriever = getattr(made, "vectorstore"), made  # noqa: B009 - not declared on BaseRetriever
        else:
            raise TypeError(
                f"factory {self.target()} returned {type(made).__name__}: expected a LangChain VectorStore, or a BaseRetriever "
                "with a vectorstore (documents are added to it and retrieved from it by id)"
            )
        if type(store).get_by_ids is VectorStore.get_by_ids:
            raise TypeError(f"{type(store).__name__} does not implement get_by_ids: pytest-lens retrieves episodes by id")
        self._store, self._retriever = store, retriever
        self.adopted()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Queue the episode's Document; a full batch is added to the store."""
        from langchain_core.documents import Document as LangChainDocument

        metadata = episode_metadata(episode_id, scope_id, timestamp, meta)
        self.queue(LangChainDocument(page_content=text, metadata=metadata, id=store_id(episode_id)))

    def write(self, documents: list[Any]) -> None:
        """One batch, in one call."""
        target = self._retriever if self._retriever is not None and hasattr(self._retriever, "add_documents") else self._store
        target.add_documents(documents, ids=[document.id for document in documents])

    def _dialect(self) -> str:
        if self._date_filter != "auto":
            return str(self._date_filter)
        self.made()
        return _KNOWN_FILTERS.get(type(self._store).__name__, "none")

    def _filter(self, filters: dict[str, Any] | None) -> dict[str, Any]:
        start, end = day_bounds(filters)
        if (start is None and end is None) or self._dialect() == "none":
            return {}
        if self._dialect() == "callable":

            def inside(document: Any) -> bool:
                day = int(document.metadata.get("lens_day", 0))
                return (start is None or day >= start) and (end is None or day <= end)

            return {"filter": inside}
        if self._dialect() == "qdrant":
            from qdrant_client import models

            day = models.Range(gte=start, lte=end)
            return {"filter": models.Filter(must=[models.FieldCondition(key="metadata.lens_day", range=day)])}
        bounds = [{"lens_day": {op: value}} for op, value in (("$gte", start), ("$lte", end)) if value is not None]
        return {"filter": bounds[0] if len(bounds) == 1 else {"$and": bounds}}

    def _hits(self, query: str, k: int, keywords: dict[str, Any]) -> list[tuple[Any, float | None]]:
        """The store's (or the retriever's) own answer, in its own order, with its raw scores where it gives them."""
        if self._retriever is not None:
            if keywords:
                self._retriever.search_kwargs = {**getattr(self._retriever, "search_kwargs", {}), **keywords, "k": k}
            elif hasattr(self._retriever, "search_kwargs"):
                self._retriever.search_kwargs = {**self._retriever.search_kwargs, "k": k}
            return [(document, None) for document in self._retriever.invoke(query)]
        try:
            # The raw score (a similarity or a distance: StoreScores reads which), not LangChain's relevance
            # function, which some configurations invert (FAISS over inner products) or push outside [0, 1].
            return list(self._store.similarity_search_with_score(query, k=k, **keywords))
        except NotImplementedError:
            return [(document, None) for document in self._store.similarity_search(query, k=k, **keywords)]

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The store's nearest documents in the store's order, one per episode."""
        if not query.strip():
            return []
        self.ready()
        k = self.limit(limit)
        hits = self._hits(query, k, self._filter(filters))
        return ranked_results(
            (
                (_ref(document), self.snippet(document.page_content), score, {"timestamp": document.metadata.get("timestamp", "")})
                for document, score in hits
            ),
            k,
            self.scores,
        )

    def lens_store_ranking(self, query: str, limit: int | None = None) -> list[str]:
        """The refs the store itself ranks for ``query`` (``similarity_search``; a retriever's ``invoke``), in its order.

        The conformance clause ``search.store_order`` holds :meth:`search` to this order.
        """
        self.ready()
        k = self.limit(limit)
        if self._retriever is not None:
            documents = [document for document, _ in self._hits(query, k, {})]
        else:
            documents = self._store.similarity_search(query, k=k)
        return [_ref(document) for document in documents]

    def retrieve(self, ref_id: str) -> Document | None:
        """``get_by_ids`` of the episode's store id: the stored text, verbatim."""
        self.ready()
        for document in self._store.get_by_ids([store_id(ref_id)]):
            if _ref(document) == ref_id:
                return Document(ref_id=ref_id, text=document.page_content, metadata={"timestamp": document.metadata.get("timestamp", "")})
        return None

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search; a date range only where the store's filter language is known."""
        return CapabilityManifest(
            search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=self._dialect() != "none"
        )

    def drop(self) -> None:
        """Let go of the store and its retriever."""
        self._store = self._retriever = None


def _ref(document: Any) -> str:
    return str(document.metadata.get(REF_KEY) or document.id)
