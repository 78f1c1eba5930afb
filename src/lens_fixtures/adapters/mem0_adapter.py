"""A real mem0 memory (``mem0ai``, optional extra ``pytest-lens[mem0]``): the LENS paper's mem0-raw.

Each episode is added with ``infer=False``, so mem0 embeds and stores it verbatim
(no LLM extraction); search is mem0's own search over its embedded local Qdrant
store. Everything stays on this machine:

- vector store: Qdrant in local mode under this adapter's ``storage_dir`` (one per
  session and xdist worker; Qdrant's local path takes an exclusive lock);
- embeddings: mem0's embedder slot holds our cached embedder (the bundled MiniLM by
  default, or ``embedding_model`` / ``embedding_base_url``), so mem0 computes the
  same vectors its ``huggingface`` provider would from the model directory, and
  reruns hit the embedding cache;
- LLM: a placeholder OpenAI config pointing at 127.0.0.1 port 9 (discard); with
  ``infer=False`` mem0 never calls it, and if it ever did the call would fail at once
  rather than leave the machine;
- telemetry off (``MEM0_TELEMETRY=False``) and mem0's own config directory
  (``MEM0_DIR``, otherwise ``~/.mem0``) under the pytest-lens cache directory, both
  unless the environment already sets them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lens_fixtures.adapters.chunk_index import date_bounds
from lens_fixtures.adapters.embedding_options import embedder_from_options, embedding_extras
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.embedding import CachedEmbedder, Embedder, default_cache_dir
from pytest_lens.extras import require_extra

__all__ = ["Mem0Adapter", "Mem0Memory", "mem0_available"]

_USER = "lens"  # mem0 scopes memories by user; one scope is live at a time
_PLACEHOLDER_URL = "http://127.0.0.1:9/v1"


def mem0_available() -> bool:
    """Whether ``mem0ai`` is installed (without importing it)."""
    return importlib.util.find_spec("mem0") is not None


# Fail when the adapter is named (a usage error naming the extra), not on the first question.
require_extra("mem0", "the mem0 adapter")


class Mem0Memory(MemoryAdapter):
    """What the mem0 adapters share: a mem0 ``Memory`` over local Qdrant and our embedder, its filters and its closing.

    ``folder`` names the directory under ``storage_dir`` (a private temporary one without it); ``llm`` (given
    mem0's LLM config) builds the model mem0 calls, as for :func:`_open_memory`.
    """

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """mem0's, and its embedder's."""
        return ("mem0", *embedding_extras(options))

    def __init__(
        self,
        storage_dir: str | None,
        folder: str,
        *,
        embedding_model: str | None,
        embedding_base_url: str | None,
        embedding_batch_size: int | None,
        cache: bool,
        cache_dir: str | None,
        embedder: Embedder | None,
        snippet_chars: int,
        max_results: int,
        threshold: float,
        llm: Callable[[Any], Any] | None = None,
    ) -> None:
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        self._owned_dir = None if storage_dir else tempfile.mkdtemp(prefix=f"lens-{folder}-")
        self._root = Path(storage_dir or self._owned_dir or ".") / folder
        self._root.mkdir(parents=True, exist_ok=True)
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._threshold = threshold
        self._memory = _open_memory(self._root, self._embedder, llm)

    def _metadata(self, episode_id: str, timestamp: str) -> dict[str, Any]:
        """What every memory of an episode carries: its ref, timestamp and (for date filters) epoch seconds."""
        metadata: dict[str, Any] = {"ref_id": episode_id, "timestamp": timestamp}
        epoch = _epoch(timestamp)
        if epoch is not None:
            metadata["epoch"] = epoch
        return metadata

    def _search(self, query: str, filters: dict[str, Any] | None, top_k: int) -> list[dict[str, Any]]:
        """``Memory.search``'s hits; a date range becomes a mem0 metadata filter on the episode's epoch seconds."""
        mem0_filters: dict[str, Any] = {"user_id": _USER}
        start, end = date_bounds(filters)
        bounds: dict[str, float] = {}
        if start and (low := _epoch(start)) is not None:
            bounds["gte"] = low
        if end and (high := _epoch(end, end_of_day=True)) is not None:
            bounds["lte"] = high
        if bounds:
            mem0_filters["epoch"] = bounds
        found = self._memory.search(query, top_k=top_k, filters=mem0_filters, threshold=self._threshold)
        return list(found.get("results", []))

    def _limit(self, limit: int | None) -> int:
        return max(1, min(limit or 10, self._max_results))

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search with a date range; no extra tools (as mem0 in the paper)."""
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=True)

    def lens_stats(self) -> dict[str, int]:
        """Embedding-cache hits and misses, and encoding time, since construction."""
        return self._embedder.stats.as_counters()

    def close(self) -> None:
        """Close mem0's databases and the Qdrant client (releasing its path lock); delete a private directory."""
        try:
            self._memory.close()
            client = getattr(self._memory.vector_store, "client", None)
            if client is not None:
                client.close()
        finally:
            self._embedder.close()
            if self._owned_dir:
                shutil.rmtree(self._owned_dir, ignore_errors=True)


class Mem0Adapter(Mem0Memory):
    """mem0 ``Memory`` with ``infer=False``, local Qdrant, our embedder, telemetry off.

    Options: the embedder's (``embedding_model``, ``embedding_base_url``,
    ``embedding_batch_size``, ``cache``, ``cache_dir``), ``snippet_chars`` (500:
    length of a search result's excerpt; ``retrieve`` returns the whole episode),
    ``max_results`` (20), ``threshold`` (mem0's search threshold; 0 here, so search returns the top
    ``limit`` like a plain vector store, as mem0-raw did in the paper: mem0's own default, 0.1, drops
    weak matches such as a query that is one rare token, and the agent then gets nothing).
    """

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        snippet_chars: int = 500,
        max_results: int = 20,
        threshold: float = 0.0,
    ) -> None:
        super().__init__(
            storage_dir,
            "mem0",
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
            embedder=embedder,
            snippet_chars=snippet_chars,
            max_results=max_results,
            threshold=threshold,
        )
        self._ids: dict[str, str] = {}

    def reset(self, scope_id: str) -> None:
        """mem0's ``reset``: the collection and the history database are recreated."""
        self._memory.reset()
        self._ids.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """``Memory.add(..., infer=False)``: one memory holding the episode verbatim."""
        old = self._ids.pop(episode_id, None)
        if old is not None:
            self._memory.delete(old)
        metadata = self._metadata(episode_id, timestamp)
        result = self._memory.add([{"role": "user", "content": text}], user_id=_USER, metadata=metadata, infer=False)
        added = [item for item in result.get("results", []) if item.get("event") == "ADD"]
        if len(added) != 1:
            raise RuntimeError(f"mem0 stored {len(added)} memories for episode {episode_id!r}, expected 1: {result!r}")
        self._ids[episode_id] = str(added[0]["id"])

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """``Memory.search``; a date range becomes a mem0 metadata filter on the episode's epoch seconds."""
        if not query.strip():
            return []
        results = []
        for item in self._search(query, filters, self._limit(limit)):
            metadata = item.get("metadata") or {}
            ref_id = metadata.get("ref_id")
            if not isinstance(ref_id, str) or self._ids.get(ref_id) != str(item.get("id")):
                continue  # not one of this scope's current episodes
            results.append(
                SearchResult(
                    ref_id=ref_id,
                    text=excerpt(str(item.get("memory", "")), self._snippet_chars),
                    score=round(float(item.get("score") or 0.0), 6),
                    metadata={"timestamp": metadata.get("timestamp")},
                )
            )
        return results

    def retrieve(self, ref_id: str) -> Document | None:
        """``Memory.get``: the stored episode text, verbatim."""
        memory_id = self._ids.get(ref_id)
        if memory_id is None:
            return None
        item = self._memory.get(memory_id)
        if item is None:
            return None
        return Document(ref_id=ref_id, text=str(item["memory"]), metadata={"timestamp": (item.get("metadata") or {}).get("timestamp")})


def _open_memory(root: Path, embedder: CachedEmbedder, llm: Callable[[Any], Any] | None = None) -> Any:
    """mem0 ``Memory`` over local Qdrant and ``embedder``; ``llm`` (given mem0's LLM config) builds the model it calls.

    Without ``llm`` mem0 holds the placeholder at 127.0.0.1:9 (the ``infer=False`` adapter never calls it).
    """
    # mem0 reads these when first imported; a user's explicit MEM0_TELEMETRY / MEM0_DIR wins.
    telemetry_asked = os.environ.get("MEM0_TELEMETRY", "").strip().lower() in ("true", "1", "yes")
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(default_cache_dir() / "mem0"))
    import mem0.memory.main
    import mem0.memory.telemetry
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase

    if not telemetry_asked:
        # mem0 may have been imported before (with its default, telemetry on): switch it off where it is read.
        mem0.memory.telemetry.MEM0_TELEMETRY = False
        mem0.memory.main.MEM0_TELEMETRY = False

    class LensEmbedding(EmbeddingBase):  # type: ignore[misc]  # mem0 ships no type information
        """mem0's embedder interface over a pytest-lens cached embedder."""

        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            return [float(x) for x in embedder.encode([str(text)])[0]]

        def embed_batch(self, texts: Any, memory_action: Any = "add") -> list[list[float]]:
            return [[float(x) for x in row] for row in embedder.encode([str(text) for text in texts])]

    dimension = embedder.dimension
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "lens", "embedding_model_dims": dimension, "path": str(root / "qdrant"), "on_disk": True},
        },
        # A placeholder the embedder hook below replaces; constructing it opens no connection.
        "embedder": {
            "provider": "openai",
            "config": {"model": embedder.model_id, "api_key": "unused", "openai_base_url": _PLACEHOLDER_URL, "embedding_dims": dimension},
        },
        "llm": {"provider": "openai", "config": {"model": "unused", "api_key": "unused", "openai_base_url": _PLACEHOLDER_URL}},
        "history_db_path": str(root / "history.db"),
    }
    memory = Memory.from_config(config)
    memory.embedding_model = LensEmbedding(memory.embedding_model.config)
    if llm is not None:
        memory.llm = llm(memory.llm.config)
    _no_model_downloads(memory)
    return memory


def _no_model_downloads(memory: Any) -> None:
    """No model is downloaded behind the run's back: what mem0 would fetch on first use is marked unavailable instead.

    - Where spaCy is installed without ``en_core_web_sm``, mem0 would download it: it then skips entity linking and
      lemmatisation, as it does when spaCy is absent (the ``infer=False`` path never needs them; extraction stores the
      same memories without entity links).
    - Where fastembed is installed (Cognee brings it) without its ``Qdrant/bm25`` model on disk, mem0's Qdrant store
      would download it at the first write (offline: three tries, 40 s of waits, then BM25 off): it searches by
      vectors alone from the start, as it does without fastembed. A model already on disk is used, as mem0 would.
    """
    if importlib.util.find_spec("spacy") is not None and importlib.util.find_spec("en_core_web_sm") is None:
        import mem0.utils.spacy_models

        mem0.utils.spacy_models._load_failed_full = True
        mem0.utils.spacy_models._load_failed_lemma = True
    store: Any = getattr(memory, "vector_store", None)
    if importlib.util.find_spec("fastembed") is not None and getattr(store, "_bm25_encoder", False) is None:
        store._bm25_encoder = _local_bm25_encoder()


def _local_bm25_encoder() -> Any:
    """The ``Qdrant/bm25`` encoder of fastembed from its local cache, or ``False`` (mem0's "tried and failed") without one."""
    from fastembed import SparseTextEmbedding
    from loguru import logger  # fastembed logs its cache misses as errors

    logger.disable("fastembed")
    try:
        return SparseTextEmbedding(model_name="Qdrant/bm25", local_files_only=True)
    except Exception:
        return False
    finally:
        logger.enable("fastembed")


def _epoch(timestamp: str, *, end_of_day: bool = False) -> float | None:
    """Seconds since the epoch (UTC) of an ISO timestamp or date; a bare end date covers its whole day."""
    try:
        moment = datetime.fromisoformat(timestamp.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end_of_day and len(timestamp.strip()) <= 10:
        return moment.timestamp() + 86_399.999
    return moment.timestamp()
