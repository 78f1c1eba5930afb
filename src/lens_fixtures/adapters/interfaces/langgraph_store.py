"""``--lens-adapter=langgraph-store:module:factory``: a LangGraph ``BaseStore`` with a semantic index, no adapter code.

This is the store LangMem and LangGraph agents keep long-term memory in. The factory is called once per
scope with the keywords it accepts among ``index`` (a ready index config: ``dims``, ``embed`` (pytest-lens's
embedder: the offline MiniLM by default, through the shared cache) and ``fields=["text"]``), ``embed``
(the embedding function alone), ``dims`` and ``storage_dir`` (a fresh directory per scope); it
returns a ``BaseStore`` (e.g. ``InMemoryStore(index=index)``).

The mapping:

- an episode is one item under the namespace ``("lens", "episodes")``, key the episode id, value
  ``{"text", "timestamp", "lens_day", "lens_scope", "meta"}``; only ``text`` is embedded; written in batches
  (one ``batch`` of ``PutOp``s) before any search;
- ``search`` is ``store.search(namespace, query=..., limit=k, filter=...)``: items with their similarity
  ``score``; date filters are the store's own comparison operators on ``lens_day`` (``$gte``/``$lte``);
- ``retrieve`` is ``store.get(namespace, key)``.
"""

from __future__ import annotations

from typing import Any

from lens_fixtures.adapters.interfaces.base import EmbeddingFactoryAdapter, day_bounds, day_number, ranked_results
from lens_fixtures.adapters.interfaces.embedders import langgraph_index
from pytest_lens import CapabilityManifest, Document, SearchResult

__all__ = ["NAMESPACE", "LangGraphStoreAdapter"]

#: Where the episodes live in the store.
NAMESPACE = ("lens", "episodes")


class LangGraphStoreAdapter(EmbeddingFactoryAdapter):
    """A LangGraph ``BaseStore`` from the user's factory, one per scope.

    Options: ``date_filter`` (true: pass ``start_date``/``end_date`` as the store's filter), the embedder's
    (``embedding_model``, ``embedding_base_url``, ``embedding_batch_size``, ``cache``, ``cache_dir``),
    ``snippet_chars`` (600), ``max_results`` (20), ``batch_size`` (32 items per ``batch``).
    """

    scheme = "langgraph-store"
    library_extra = "langgraph"

    def setup(self) -> None:
        """The embedder as a LangGraph index config over ``text``; no store yet."""
        self._index_config = langgraph_index(self._embedder, ["text"])
        self._store: Any = None

    def offered(self) -> dict[str, Any]:
        """``index`` (the whole config), ``embed`` and ``dims``."""
        config = self._index_config
        return {"index": dict(config), "embed": config["embed"], "dims": config["dims"]}

    def adopt(self, made: Any) -> None:
        """A LangGraph ``BaseStore``."""
        from langgraph.store.base import BaseStore

        if not isinstance(made, BaseStore):
            raise TypeError(f"factory {self.target()} returned {type(made).__name__}: expected a langgraph.store.base.BaseStore")
        self._store = made
        self.adopted()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Queue the episode's item; a full batch is written."""
        from langgraph.store.base import PutOp

        value = {"text": text, "timestamp": timestamp, "lens_day": day_number(timestamp), "lens_scope": scope_id, "meta": dict(meta or {})}
        self.queue(PutOp(namespace=NAMESPACE, key=episode_id, value=value, index=["text"]))

    def write(self, operations: list[Any]) -> None:
        """One batch, in one call."""
        self._store.batch(operations)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The store's nearest items in the store's order, one per episode."""
        if not query.strip():
            return []
        self.ready()
        k = self.limit(limit)
        start, end = day_bounds(filters)
        bounds = {op: value for op, value in (("$gte", start), ("$lte", end)) if value is not None}
        where = {"lens_day": bounds} if self._date_filter and bounds else None
        items = self._store.search(NAMESPACE, query=query, limit=k, filter=where)
        return ranked_results(
            (
                (item.key, self.snippet(item.value.get("text", "")), item.score, {"timestamp": item.value.get("timestamp", "")})
                for item in items
            ),
            k,
            self.scores,
        )

    def lens_store_ranking(self, query: str, limit: int | None = None) -> list[str]:
        """The keys the store itself ranks for ``query`` (``store.search``), in its order.

        The conformance clause ``search.store_order`` holds :meth:`search` to this order.
        """
        self.ready()
        return [item.key for item in self._store.search(NAMESPACE, query=query, limit=self.limit(limit))]

    def retrieve(self, ref_id: str) -> Document | None:
        """``store.get(namespace, ref_id)``: the stored text, verbatim."""
        self.ready()
        item = self._store.get(NAMESPACE, ref_id)
        if item is None:
            return None
        return Document(ref_id=ref_id, text=str(item.value.get("text", "")), metadata={"timestamp": item.value.get("timestamp", "")})

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search; a date range unless ``date_filter`` is off."""
        return CapabilityManifest(
            search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=self._date_filter
        )

    def drop(self) -> None:
        """Let go of the store."""
        self._store = None
