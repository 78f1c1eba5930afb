"""Cognee (optional extra ``pytest-lens[cognee]``): ``add`` at ingest, ``cognify`` at ``prepare``, Cognee's search.

- ``ingest`` is ``cognee.add``: the episode (headed by its timestamp) becomes one Cognee data
  item of the adapter's dataset. No model call.
- ``prepare`` is the barrier: ``cognee.cognify`` chunks every item added since the last one,
  asks the model for each chunk's knowledge graph and summary, and embeds chunks, entities and
  summaries into Cognee's stores. Items already cognified are skipped (Cognee's incremental
  loading), so the memory at checkpoint N holds only the first N episodes.
- ``search`` reads the graph ``cognify`` built (``search="memory"``, the default): the triplets of
  Cognee's graph-completion retriever (its ``GRAPH_COMPLETION`` context: vector search over the
  graph's nodes and edges, projected onto the graph; no model request), keeping those with something
  the model wrote in them (an entity, or a summary that says something). Each leads to its episodes:
  an entity through the chunks that contain it, a summary through the chunk it was made from, a
  chunk through its document (the data item, which names the episode). Cognee's own context would
  also carry the raw chunks' triplets (chunk -> document), which hold whatever the model extracted
  or not; they are left out. ``search="fused"`` fuses that ranking (RRF, k=60) with Cognee's
  ``CHUNKS`` search over the raw chunks.
- ``retrieve`` returns the episode verbatim from the adapter's copy (Cognee keeps the text too).
- Model: Cognee calls its model through litellm; the adapter registers a litellm provider
  (``pytestlens``) whose calls go to the run's ``lens_llm``, so every extraction goes through the
  run's endpoint, request cache and counters. Embeddings: Cognee embeds only over HTTP or with
  models it downloads, so the adapter serves the shared offline embedder on a private
  ``/v1/embeddings`` endpoint on 127.0.0.1 (Cognee's ``openai_compatible`` provider).
- Stores: SQLite (Cognee's metadata), LanceDB (vectors) and Ladybug (Cognee's embedded Kuzu
  graph) under a directory of the adapter's own, removed by ``close``; ``reset`` prunes them.
- A model reply Cognee cannot validate: Cognee asks again with its validation error (twice), then
  its retry policy re-sends the same prompt for at least 240 s. A re-sent prompt gets the same
  reply from a cached or deterministic endpoint, so the adapter stops there and raises
  :class:`CogneeReplyError` quoting Cognee's validation error: an adapter fault at ``prepare``,
  never an episode silently missing from the memory.

Cognee's configuration is process-global (its root directories, model and embedding settings,
litellm's provider table). Instances in one process take turns: every call holds a process-wide
lock and points Cognee at its own directories and endpoints first, and Cognee's coroutines all run
on one event loop thread. So instances are correct side by side but never run concurrently
(``lens_thread_safe`` and ``lens_isolated_instances`` are not declared).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Coroutine, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, TypeVar

from lens_fixtures.adapters.fusion import reciprocal_rank_fusion
from lens_fixtures.adapters.model_required import require_llm
from lens_fixtures.adapters.search_modes import FUSED, search_mode
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import AdapterUnavailable, CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.embedding import build_embedder

if TYPE_CHECKING:
    from pytest_lens.embedding import CachedEmbedder, Embedder
    from pytest_lens.llm.client import ChatClient

__all__ = ["PROVIDER", "CogneeAdapter", "CogneeReplyError"]

#: The litellm provider name under which the adapter serves Cognee's model calls.
PROVIDER = "pytestlens"
_DATASET = "lens"
_FEEDBACK = "\n\nYour previous response failed validation with this error:\n"
_INSTALL = "pip install 'pytest-lens[cognee]'"
#: The node types of Cognee's graph that its model writes; a triplet without one holds only the raw chunks.
_MODEL_BUILT = frozenset({"Entity", "TextSummary"})
T = TypeVar("T")

_LOCK = threading.RLock()
_LOOP: asyncio.AbstractEventLoop | None = None
_INSTANCES: dict[str, CogneeAdapter] = {}


class CogneeReplyError(RuntimeError):
    """Cognee could not read the model's structured-output reply (its validation error is quoted)."""


def _loop() -> asyncio.AbstractEventLoop:
    """The one event loop every Cognee coroutine of the process runs on (Cognee caches loop-bound engines)."""
    global _LOOP
    with _LOCK:
        if _LOOP is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="cognee-loop", daemon=True).start()
            _LOOP = loop
        return _LOOP


def _import_cognee() -> Any:
    """Import Cognee once, quietly and offline, with the adapter's litellm provider registered."""
    # Before the first import: no log file under ~/.cognee, no model price list fetched from the
    # network, no telemetry, tiktoken's encodings from litellm's bundled copy (Cognee falls back to
    # tiktoken to count tokens for an embedding model it cannot look up).
    os.environ.setdefault("COGNEE_LOG_FILE", "false")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TELEMETRY_DISABLED", "1")
    os.environ.setdefault("ENABLE_BACKEND_ACCESS_CONTROL", "false")
    os.environ.setdefault("CACHING", "false")
    # Cognee probes the model and the embedder once per process, on its first pipeline ("Respond to me with the
    # following string: test"). Which run pays that request would depend on what ran before it in the process, so
    # a recorded run would not replay request for request; the adapter's endpoints are its own, and one that fails
    # fails the first real call with its own error.
    os.environ.setdefault("COGNEE_SKIP_CONNECTION_TEST", "true")
    import litellm
    import litellm.litellm_core_utils.default_encoding  # sets TIKTOKEN_CACHE_DIR to litellm's bundled encodings

    with _LOCK:
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": PROVIDER, "custom_handler": _provider()}]
    import cognee

    return cognee


def _provider() -> Any:
    """The litellm handler for ``pytestlens/<instance>`` models: the instance's ``lens_llm`` answers."""
    from litellm import CustomLLM

    class LensProvider(CustomLLM):  # type: ignore[misc,unused-ignore]  # typed where litellm is installed, Any where not
        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            instance = _INSTANCES.get(model.split("/", 1)[-1])
            if instance is None:
                raise CogneeReplyError(f"no Cognee adapter answers for model {model!r} (it was closed)")
            optional = kwargs.get("optional_params") or {}
            content, usage = await asyncio.to_thread(instance._complete, messages, optional.get("response_format"))
            response = kwargs["model_response"]
            response.choices[0].message.content = content
            if usage is not None:
                response.usage = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}
            return response

    return LensProvider()


class _EmbeddingServer:
    """``POST /v1/embeddings`` on 127.0.0.1 answered by an :class:`Embedder` (Cognee embeds over HTTP)."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self.requests = 0
        self.texts = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                texts = body.get("input", [])
                texts = [texts] if isinstance(texts, str) else list(texts)
                vectors: Any = embedder.encode(texts) if texts else []
                owner.requests += 1
                owner.texts += len(texts)
                data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in row]} for i, row in enumerate(vectors)]
                payload = json.dumps(
                    {"object": "list", "model": body.get("model"), "data": data, "usage": {"prompt_tokens": 0, "total_tokens": 0}}
                )
                encoded = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="cognee-embeddings", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class CogneeAdapter(MemoryAdapter):
    """Cognee's ``add`` / ``cognify`` / ``search`` over stores in a private directory, its model the run's.

    Options: ``model`` (the extraction model; the run's ``lens_llm`` model by default),
    ``extraction_max_tokens`` (2048), ``chunk_size`` (Cognee's chunk size in tokens; 256 by default, the
    MiniLM's input), ``parallel`` (False: one item and one chunk at a time, see :meth:`prepare`),
    ``search`` (``memory``: the graph cognify built; ``fused``: fused with the raw chunks),
    ``snippet_chars`` (500), ``max_results`` (20) and the embedder's options
    (``embedding_model``, ``embedding_base_url``, ``embedding_batch_size``, ``cache``, ``cache_dir``,
    ``embedder``) as for the ``embedding`` adapter.
    """

    lens_model_built = True

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """Cognee's extra: a missing one is a usage error at start-up, not a skip per question."""
        return ("cognee",)

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        extraction_max_tokens: int = 2048,
        chunk_size: int = 256,
        parallel: bool = False,
        search: str = "memory",
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        snippet_chars: int = 500,
        max_results: int = 20,
    ) -> None:
        lens_llm = require_llm(lens_llm, "cognee needs an LLM to build its memory")
        if importlib.util.find_spec("cognee") is None:
            raise AdapterUnavailable(f"cognee is not installed: {_INSTALL}")
        self._llm = (lens_llm.with_model(model) if model else lens_llm).with_max_tokens(extraction_max_tokens)
        self._chunk_size = chunk_size
        self._parallel = parallel
        self._search = search_mode(search, "cognee")
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._root = tempfile.mkdtemp(prefix="cognee-", dir=storage_dir)
        self._key = uuid.uuid4().hex
        self._embedder = build_embedder(
            embedder=embedder,
            model=embedding_model,
            base_url=embedding_base_url,
            batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        self._server = _EmbeddingServer(self._embedder)
        self._episodes: dict[str, tuple[str, str]] = {}
        self._refs_by_data: dict[str, list[str]] = {}
        #: Node id -> the episodes it came from, for every chunk and model-written node of the graph (see :meth:`prepare`).
        self._provenance: dict[str, frozenset[str]] = {}
        self._pending = 0
        self._generation = 0
        #: The prompts whose reply Cognee rejected: their digest -> (the chunk's text, Cognee's validation error).
        self._rejected: dict[str, tuple[str, str]] = {}
        self._rejected_reply: str | None = None
        self._task: asyncio.Task[Any] | None = None
        self._stats = {"extraction_calls": 0, "extraction_prompt_tokens": 0, "extraction_completion_tokens": 0, "cognify_runs": 0}
        self._cognee = _import_cognee()
        _INSTANCES[self._key] = self

    # -- Cognee, pointed at this instance ------------------------------------------------------------

    def _run(self, make: Any) -> Any:
        """Run ``make()`` (a Cognee coroutine) on the shared loop, Cognee configured for this instance.

        When :meth:`_complete` finds Cognee re-sending a prompt whose reply it rejected, it cancels the
        coroutine (Cognee's retries would wait 240 s) and this raises :class:`CogneeReplyError`.
        """
        with _LOCK:
            self._activate()
            self._rejected_reply = None
            loop = _loop()

            caller = contextvars.copy_context()

            async def guarded() -> Any:
                # The loop's thread has a context of its own: take the caller's, so the run counts Cognee's
                # requests on the question whose call caused them (the tasks Cognee starts inherit it).
                for variable, value in caller.items():
                    variable.set(value)
                self._task = asyncio.current_task()
                coroutine: Coroutine[Any, Any, Any] = make()
                return await coroutine

            future = asyncio.run_coroutine_threadsafe(guarded(), loop)
            try:
                return future.result()
            except BaseException as exc:
                if self._rejected_reply is not None:
                    raise CogneeReplyError(self._rejected_reply) from None
                cause = _reply_error(exc)
                if cause is not None:
                    raise cause from None
                raise
            finally:
                self._task = None

    def _activate(self) -> None:
        config = self._cognee.config
        system = os.path.join(self._root, f"system-{self._generation}")
        config.system_root_directory(system)
        config.data_root_directory(os.path.join(self._root, f"data-{self._generation}"))
        config.set_graph_database_subprocess_enabled(False)
        config.set_vector_db_subprocess_enabled(False)
        config.set_llm_config(
            {"llm_provider": "custom", "llm_model": f"{PROVIDER}/{self._key}", "llm_api_key": "unused", "llm_endpoint": ""}
        )
        config.set_embedding_config(
            {
                "embedding_provider": "openai_compatible",
                "embedding_model": self._embedder.model_id,
                "embedding_dimensions": self._embedder.dimension,
                "embedding_endpoint": self._server.base_url,
                "embedding_api_key": "unused",
                "embedding_max_completion_tokens": self._chunk_size,
            }
        )

    def _complete(self, messages: list[dict[str, Any]], response_format: Any) -> tuple[str, tuple[int, int] | None]:
        """One of Cognee's model calls through the run's client; a re-send of a rejected prompt stops the call."""
        key = _digest(messages)
        last = str(messages[-1].get("content", "")) if messages else ""
        if key in self._rejected:
            # Cognee's retry policy re-sends a prompt whose reply it could not validate; the endpoint
            # (cached, or at temperature 0) answers it the same way, so waiting on it only burns time.
            # Cognee asks for a chunk's graph and its summary side by side, and which re-send comes first is
            # its retry's random jitter: the fault names every rejected request on the chunk, in a fixed order.
            errors = sorted({error for text, error in self._rejected.values() if text == last})
            detail = errors[0] if len(errors) == 1 else f"{len(errors)} requests on one chunk: " + " | ".join(errors)
            self._rejected_reply = f"Cognee could not validate the model's reply: {detail}"
            task = self._task  # the loop is not asked for: _run holds the lock _loop() takes
            if task is not None:
                task.get_loop().call_soon_threadsafe(task.cancel)
            raise CogneeReplyError(self._rejected_reply)
        if _FEEDBACK in last:
            text, error = last.split(_FEEDBACK, 1)
            error = error.split("\n\nPlease fix the JSON", 1)[0]
            self._rejected[_digest([*messages[:-1], {**messages[-1], "content": text}])] = (text, " ".join(error.split()))
        reply = self._llm.complete(
            messages, response_format=response_format if isinstance(response_format, dict) else None, purpose="cognee"
        )
        self._stats["extraction_calls"] += 1
        usage = None
        if reply.usage is not None:
            usage = (reply.usage.prompt_tokens, reply.usage.completion_tokens)
            self._stats["extraction_prompt_tokens"] += usage[0]
            self._stats["extraction_completion_tokens"] += usage[1]
        return reply.content, usage

    # -- the contract --------------------------------------------------------------------------------

    def reset(self, scope_id: str) -> None:
        """Forget everything: later calls use fresh stores (the old ones are deleted)."""
        old = (os.path.join(self._root, f"system-{self._generation}"), os.path.join(self._root, f"data-{self._generation}"))
        self._generation += 1
        self._episodes.clear()
        self._refs_by_data.clear()
        self._provenance.clear()
        self._pending = 0
        self._rejected.clear()
        for path in old:
            shutil.rmtree(path, ignore_errors=True)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """``cognee.add`` of the episode headed by its timestamp (no model call); cognified at the next ``prepare``."""
        record = f"Record ({timestamp}):\n{text}"
        info = self._run(lambda: self._cognee.add(record, dataset_name=_DATASET))
        data_ids = [str(item["data_id"]) for item in getattr(info, "data_ingestion_info", None) or [] if item.get("data_id")]
        for refs in self._refs_by_data.values():
            if episode_id in refs:
                refs.remove(episode_id)
        for data_id in data_ids:
            self._refs_by_data.setdefault(data_id, []).append(episode_id)
        self._episodes[episode_id] = (timestamp, text)
        self._pending += 1

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """``cognee.cognify`` of every item added since the last one; a reply Cognee cannot read is :class:`CogneeReplyError`.

        Cognee extracts the chunks of up to 20 items at once, so which request comes first, and which unreadable reply
        stops ``cognify``, varies from run to run: a recording would not replay request for request. Unless
        ``parallel``, the adapter has Cognee take one item and one chunk at a time (Cognee's order: the largest item first).
        """
        if not self._pending:
            return
        self._stats["cognify_runs"] += 1
        batches = {} if self._parallel else {"data_per_batch": 1, "chunks_per_batch": 1}
        self._run(lambda: self._cognee.cognify(datasets=[_DATASET], chunk_size=self._chunk_size, **batches))
        self._pending = 0
        self._provenance = self._run(self._read_provenance)

    async def _read_provenance(self) -> dict[str, frozenset[str]]:
        """Node id -> episodes, read from the graph.

        A document's are its data item's; a chunk's its document's; an entity's those of the chunks containing it; a
        summary's those of the chunk it was made from.
        """
        from cognee.infrastructure.databases.graph import get_graph_engine

        engine = await get_graph_engine()
        nodes, edges = await engine.get_graph_data()
        kinds = {str(node_id): str((props or {}).get("type", "")) for node_id, props in nodes}
        refs: dict[str, set[str]] = {node: set(self._refs_by_data.get(node, ())) for node, kind in kinds.items() if kind == "TextDocument"}
        # Chunks first (from their documents), then what hangs off them.
        for relation, source_kind, target_kind, owner in (
            ("is_part_of", "DocumentChunk", "TextDocument", "source"),
            ("contains", "DocumentChunk", "Entity", "target"),
            ("made_from", "TextSummary", "DocumentChunk", "source"),
        ):
            for source, target, name, *_ in edges:
                source, target = str(source), str(target)
                if name == relation and kinds.get(source) == source_kind and kinds.get(target) == target_kind:
                    node, via = (source, target) if owner == "source" else (target, source)
                    refs.setdefault(node, set()).update(refs.get(via, ()))
        return {node: frozenset(found) for node, found in refs.items() if found}

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The graph's triplets that hold what the model wrote, each leading to its episodes (``fused``: and Cognee's chunks)."""
        if not query.strip() or not self._episodes:
            return []
        limit = max(1, min(limit or 10, self._max_results))
        rankings: dict[str, list[str]] = {"graph": []}
        shown: dict[str, list[str]] = {}
        for refs, line in self._graph_hits(query, limit * 3):
            for ref in refs:
                if _within(self._episodes[ref][0], filters):
                    rankings["graph"].append(ref)
                    if line not in shown.setdefault(ref, []) and len(shown[ref]) < 4:
                        shown[ref].append(line)
        excerpts: dict[str, str] = {}
        if self._search == FUSED:
            rankings["chunks"] = []
            for ref, text in self._chunk_hits(query, limit * 3):
                if _within(self._episodes[ref][0], filters):
                    rankings["chunks"].append(ref)
                    excerpts.setdefault(ref, excerpt(text, self._snippet_chars))
        results = []
        for item in reciprocal_rank_fusion(rankings)[:limit]:
            ref = item.key
            text = "\n".join(part for part in ("\n".join(shown.get(ref, [])), excerpts.get(ref, "")) if part)
            results.append(SearchResult(ref_id=ref, text=text, score=round(item.score, 6), metadata={"timestamp": self._episodes[ref][0]}))
        return results

    def _graph_hits(self, query: str, top_k: int) -> list[tuple[list[str], str]]:
        """``(episodes, what it says)`` per triplet of Cognee's graph-completion context that holds a model-written node."""
        from cognee.modules.retrieval.exceptions.exceptions import NoDataError
        from cognee.modules.retrieval.graph_completion_retriever import GraphCompletionRetriever

        try:
            triplets = self._run(lambda: GraphCompletionRetriever(top_k=top_k).get_retrieved_objects(query))
        except NoDataError:  # nothing cognified yet: Cognee has no graph to search
            return []
        hits = []
        for triplet in triplets or []:
            ends = (triplet.node1, triplet.node2)
            built = [node for node in ends if _says(node)]
            if not built:
                continue  # the raw chunks' structure (chunk -> document), or a summary that says nothing
            refs = set().union(*(self._provenance.get(str(node.id), frozenset()) for node in built))
            for node in ends:
                if node.attributes.get("type") == "DocumentChunk":
                    refs &= self._provenance.get(str(node.id), frozenset())
            relation = str(triplet.attributes.get("relationship_name") or triplet.attributes.get("relationship_type") or "")
            hits.append((sorted(refs, key=list(self._episodes).index), _triplet_line(ends, relation)))
        return hits

    def _chunk_hits(self, query: str, top_k: int) -> list[tuple[str, str]]:
        """``(episode, chunk text)`` of Cognee's ``CHUNKS`` search over the raw chunks, best first."""
        from cognee.modules.retrieval.exceptions.exceptions import NoDataError
        from cognee.modules.search.types import SearchType

        try:
            found = self._run(lambda: self._cognee.search(query, query_type=SearchType.CHUNKS, datasets=[_DATASET], top_k=top_k))
        except NoDataError:  # nothing cognified yet: Cognee has no chunk to search
            return []
        return [
            (ref, str(chunk.get("text", "")))
            for chunk in _chunks(found)
            for ref in self._refs_by_data.get(str(chunk.get("document_id") or chunk.get("data_id") or ""), [])
        ]

    def retrieve(self, ref_id: str) -> Document | None:
        """The episode verbatim, from the adapter's copy."""
        kept = self._episodes.get(ref_id)
        return Document(ref_id=ref_id, text=kept[1], metadata={"timestamp": kept[0]}) if kept else None

    def get_capabilities(self) -> CapabilityManifest:
        """Graph search over what cognify built, with a date range (read from the episode's timestamp)."""
        return CapabilityManifest(search_modes=["graph"], max_results_per_search=self._max_results, supports_date_range=True)

    def lens_stats(self) -> dict[str, int]:
        """Cognee's model calls and tokens, ``cognify`` runs, and embedding requests and texts."""
        return {**self._stats, "embedding_requests": self._server.requests, "embedded_texts": self._server.texts}

    def close(self) -> None:
        """Stop the embeddings endpoint, forget the instance and delete every store it made."""
        _INSTANCES.pop(self._key, None)
        self._server.close()
        shutil.rmtree(self._root, ignore_errors=True)


def _digest(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()


def _reply_error(exc: BaseException) -> CogneeReplyError | None:
    """The :class:`CogneeReplyError` in ``exc``'s causes, or a pydantic validation error of a model reply, as one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, CogneeReplyError):
            return current
        if type(current).__name__ == "ValidationError":
            return CogneeReplyError(f"Cognee could not validate the model's reply: {' '.join(str(current).split())}")
        current = current.__cause__ or current.__context__
    return None


def _chunks(found: Any) -> list[dict[str, Any]]:
    """The chunk payloads in what ``cognee.search(..., CHUNKS)`` returned, in rank order."""
    chunks: list[dict[str, Any]] = []
    for item in found or []:
        payload = getattr(item, "search_result", item)
        if isinstance(payload, dict) and "search_result" in payload:
            payload = payload["search_result"]
        for entry in payload if isinstance(payload, list) else [payload]:
            if isinstance(entry, dict):
                chunks.append(entry)
    return chunks


def _says(node: Any) -> bool:
    """Whether a graph node is something Cognee's model wrote that says something (an entity, a non-empty summary)."""
    kind = node.attributes.get("type")
    return kind == "Entity" or (kind == "TextSummary" and bool(str(node.attributes.get("text") or "").strip()))


def _triplet_line(ends: tuple[Any, Any], relation: str) -> str:
    """A triplet as the agent reads it: entities by name, a summary by its text, a chunk as "the record"."""
    names = []
    for node in ends:
        kind, attributes = node.attributes.get("type"), node.attributes
        if kind == "TextSummary":
            return "summary: " + " ".join(str(attributes.get("text") or "").split())[:300]
        names.append("the record" if kind == "DocumentChunk" else str(attributes.get("name") or kind or "?"))
    return f"{names[0]} -[{relation}]-> {names[1]}"


def _within(timestamp: str, filters: dict[str, Any] | None) -> bool:
    day = timestamp.strip()[:10]
    start, end = (filters or {}).get("start_date"), (filters or {}).get("end_date")
    return not (start and day < str(start)[:10]) and not (end and day > str(end)[:10])
