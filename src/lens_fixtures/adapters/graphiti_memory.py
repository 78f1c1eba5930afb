"""Graphiti (graphiti-core 0.31, optional extra ``pytest-lens[graphiti]``): a temporal knowledge graph built by the model.

Each episode is one ``Graphiti.add_episode`` (its ``reference_time`` the episode's
timestamp, its ``group_id`` the scope): Graphiti asks the model for the episode's
entities, resolves them against the graph, asks for the facts (edges) between them,
dates each fact and dedups it against the facts already stored. A fact stated again by
a later episode is merged into the stored one, whose ``episodes`` list then names both.

- Store: Graphiti's embedded Kuzu database, in a directory the adapter owns under
  ``storage_dir`` (a fresh database at every ``reset``; all of it deleted at ``close``).
  FalkorDB Lite, the other embedded store, needs Python 3.12.
- LLM: Graphiti's ``LLMClient`` slot holds the run's ``lens_llm`` (:class:`ChatClient`), so
  every call goes through the run's endpoint and request cache. Graphiti's structured
  output (its pydantic schema appended to the prompt) is requested as the OpenAI
  ``json_schema`` response format, as Graphiti's own generic client does (``json_object``
  with ``structured_output="json_object"``). Embeddings come from the shared embedder
  (the offline MiniLM by default). Graphiti's default OpenAI reranker is never built:
  search uses reciprocal rank fusion only, so nothing leaves the machine.
- A reply Graphiti cannot use (not JSON, or JSON its response model rejects) raises
  :class:`GraphitiReplyError` quoting the reply and pydantic's message: an adapter fault on
  ``ingest`` naming the episode. Graphiti itself would retry a non-JSON reply four times
  with 5-120 s waits before failing, and some of its steps read a rejected reply as "no
  facts"; neither is allowed to pass silently here.
- Search is Graphiti's ``search_`` over what the model built (``search="memory"``, the default):
  facts (edges) and entities (nodes), each by BM25 and cosine similarity fused by RRF, as in
  Graphiti's own hybrid recipes, with no cross-encoder. Each fact leads to the episodes it came
  from (its ``episodes`` list), each entity to the episodes that mention it (``MENTIONS``); the
  two rankings are fused into one ranking of episodes (RRF, k=60), each shown with the facts and
  entities that led to it. A graph the model left empty finds nothing. ``search="fused"`` adds
  Graphiti's BM25 over the raw episodes to the fusion.
- ``retrieve`` returns the episode as Graphiti stored it (``store_raw_episode_content``).
- ``prepare()`` has nothing to wait for: ``add_episode`` is awaited in ``ingest``.

Two defects of graphiti-core 0.31.2 with Kuzu are worked around: ``add_episode`` with a
``group_id`` reads ``driver._database``, which ``KuzuDriver`` never sets
(``AttributeError``), and ``KuzuDriver.build_indices_and_constraints`` is a no-op, so the
full-text indexes every search needs are never created (``Binder exception: Table
RelatesToNode_ doesn't have an index with name edge_name_and_fact``). The adapter sets the
attribute and creates the indexes Graphiti defines for Kuzu.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.chunk_index import date_bounds
from lens_fixtures.adapters.embedding_options import embedder_from_options
from lens_fixtures.adapters.model_required import require_llm
from lens_fixtures.adapters.search_modes import FUSED, search_mode
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.extras import require_extra

if TYPE_CHECKING:
    from pytest_lens.embedding import Embedder
    from pytest_lens.llm.client import ChatClient

__all__ = ["GraphitiAdapter", "GraphitiReplyError", "parse_graphiti_reply"]

_RRF_K = 60
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n?|\r?\n?```[ \t]*$")

require_extra("graphiti", "the graphiti adapter")  # when the adapter is named: a usage error naming the extra


def _kuzu_shadowed() -> str | None:
    """Why the ``kuzu`` module here is not Kuzu, or ``None``: cognee 1.6's wheel ships a ``kuzu`` shim over Ladybug.

    Ladybug (a Kuzu fork) loads full-text search as an extension it downloads; Graphiti's searches need it built in,
    as Kuzu 0.11 has it, so every search would fail with "function CREATE_FTS_INDEX is not defined".
    """
    import kuzu

    module = getattr(getattr(kuzu, "Database", None), "__module__", "kuzu")
    if module.split(".")[0] == "kuzu":
        return None
    return (
        f"the kuzu module here ({kuzu.__file__}) is {module.split('.')[0]} {getattr(kuzu, '__version__', '?')} under Kuzu's name "
        "(cognee's wheel installs that shim), without Kuzu 0.11's built-in full-text search that Graphiti needs: "
        "install pytest-lens[graphiti] and pytest-lens[cognee] in separate environments (docs/systems/cognee.md)"
    )


if (_SHADOWED := _kuzu_shadowed()) is not None:
    raise ImportError(_SHADOWED)


class GraphitiReplyError(ValueError):
    """The model's reply is not the structured output Graphiti asked for."""


def parse_graphiti_reply(reply: str, response_model: Any) -> dict[str, Any]:
    """The reply as the dict Graphiti reads, checked against its pydantic ``response_model``; :class:`GraphitiReplyError` otherwise.

    A code fence around the object is accepted (Graphiti's generic client strips one too).
    """
    from pydantic import ValidationError

    name = getattr(response_model, "__name__", "structured")
    text = _FENCE.sub("", reply.strip()).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphitiReplyError(f"the {name} reply is not JSON ({exc}): {_shown(reply)}") from None
    if not isinstance(data, dict):
        raise GraphitiReplyError(f"the {name} reply is a JSON {type(data).__name__}, not an object: {_shown(reply)}")
    if response_model is not None:
        try:
            response_model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(the object)"
            raise GraphitiReplyError(
                f"the {name} reply does not match Graphiti's schema ({exc.error_count()} validation error(s); "
                f"{where}: {first['msg']}): {_shown(reply)}"
            ) from None
    return data


def _shown(reply: str) -> str:
    flat = " ".join(reply.split())
    return repr(flat[:200] + ("..." if len(flat) > 200 else ""))


def _reference_time(episode_id: str, timestamp: str) -> datetime:
    try:
        moment = datetime.fromisoformat(timestamp.strip())
    except ValueError:
        raise ValueError(f"graphiti: episode {episode_id!r} has timestamp {timestamp!r}, not an ISO 8601 date or time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _group_id(scope_id: str) -> str:
    """Graphiti accepts ASCII letters, digits, ``-`` and ``_`` in a group id."""
    return "lens_" + (re.sub(r"[^A-Za-z0-9_-]", "_", scope_id) or "scope")


class GraphitiAdapter(MemoryAdapter):
    """graphiti-core over embedded Kuzu, the run's model and the shared embedder.

    Options: ``model`` (the extraction model; the run's ``lens_llm`` model by default),
    ``extraction_max_tokens`` (2048: the most any one Graphiti request may generate),
    ``structured_output`` (``json_schema``, or ``json_object`` for endpoints without it),
    ``search`` (``memory``: facts and entities; ``fused``: also Graphiti's BM25 over the raw episodes),
    ``snippet_chars`` (500), ``max_results`` (20) and the embedder's options.
    """

    lens_isolated_instances = True
    lens_model_built = True

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        extraction_max_tokens: int = 2048,
        structured_output: str = "json_schema",
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
        lens_llm = require_llm(lens_llm, "graphiti needs an LLM to build its graph")
        if structured_output not in ("json_schema", "json_object"):
            raise ValueError(f"option structured_output must be 'json_schema' or 'json_object', got {structured_output!r}")
        os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
        self._llm = (lens_llm.with_model(model) if model else lens_llm).with_max_tokens(extraction_max_tokens)
        self._max_tokens = extraction_max_tokens
        self._structured = structured_output
        self._search = search_mode(search, "graphiti")
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        if storage_dir:
            Path(storage_dir).mkdir(parents=True, exist_ok=True)
        self._root = Path(tempfile.mkdtemp(prefix="lens-graphiti-", dir=storage_dir or None))
        self._loop = asyncio.new_event_loop()
        self._stats = {
            "extraction_calls": 0,
            "extraction_prompt_tokens": 0,
            "extraction_completion_tokens": 0,
            "episodes": 0,
            "facts": 0,
            "entities": 0,
        }
        self._generation = 0
        self._graphiti: Any = None
        self._driver: Any = None
        self._group = _group_id("")
        self._uuids: dict[str, str] = {}  # ref_id -> Graphiti's episode uuid
        self._refs: dict[str, str] = {}  # episode uuid -> ref_id
        self._stamps: dict[str, str] = {}  # ref_id -> the timestamp as given (Kuzu keeps UTC without an offset)
        self._failures: list[str] = []  # the failed requests of the episode being added

    # --- Graphiti's clients -------------------------------------------------------------------

    def _open(self) -> None:
        """A fresh Kuzu database and a Graphiti over it (the previous one closed and deleted)."""
        from graphiti_core import Graphiti
        from graphiti_core.driver.driver import GraphProvider
        from graphiti_core.driver.kuzu_driver import KuzuDriver
        from graphiti_core.graph_queries import get_fulltext_indices

        self._shut()
        self._generation += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "The Kuzu backend is deprecated"
            driver = KuzuDriver(db=str(self._root / f"graph-{self._generation}.kuzu"))
        driver._database = ""  # graphiti-core 0.31.2 reads it in add_episode; KuzuDriver never sets it
        for query in get_fulltext_indices(GraphProvider.KUZU):  # KuzuDriver.build_indices_and_constraints creates none
            self._run(driver.execute_query(query))
        self._driver = driver
        self._graphiti = Graphiti(
            graph_driver=driver,
            llm_client=_lens_llm_client(self),
            embedder=_lens_embedder(self._embedder),
            cross_encoder=_no_reranker(),
        )

    def _shut(self) -> None:
        driver, self._driver, self._graphiti = self._driver, None, None
        if driver is not None:
            driver.client.close()
            driver.db.close()
        for path in self._root.glob("graph-*"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)

    def _complete(self, messages: list[Any], response_model: Any, max_tokens: int) -> dict[str, Any]:
        """One Graphiti request through the run's chat client; the reply parsed and checked as Graphiti will read it."""
        if response_model is None or self._structured == "json_object":
            response_format: dict[str, Any] = {"type": "json_object"}
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": response_model.__name__, "schema": response_model.model_json_schema()},
            }
        try:
            reply = self._llm.complete(
                [{"role": message.role, "content": message.content} for message in messages],
                max_tokens=min(max_tokens, self._max_tokens),
                response_format=response_format,
                purpose="graphiti",
            )
            self._stats["extraction_calls"] += 1
            if reply.usage is not None:
                self._stats["extraction_prompt_tokens"] += reply.usage.prompt_tokens
                self._stats["extraction_completion_tokens"] += reply.usage.completion_tokens
            return parse_graphiti_reply(reply.content, response_model)
        except Exception as exc:
            self._failures.append(f"{type(exc).__name__}: {exc}")  # Graphiti swallows some (a fact's dates)
            raise

    # --- the memory contract ------------------------------------------------------------------

    def reset(self, scope_id: str) -> None:
        """A fresh, empty graph for the scope (the previous database deleted)."""
        self._uuids.clear()
        self._refs.clear()
        self._stamps.clear()
        self._group = _group_id(scope_id)
        self._open()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """``Graphiti.add_episode``: the model's entities and facts about the episode, dated by its timestamp."""
        from graphiti_core.nodes import EpisodeType

        reference_time = _reference_time(episode_id, timestamp)
        if self._graphiti is None:
            self.reset(scope_id)
        if episode_id in self._uuids:
            self._refs.pop(self._uuids[episode_id], None)
            self._run(self._graphiti.remove_episode(self._uuids.pop(episode_id)))
        self._failures = []
        try:
            added = self._run(
                self._graphiti.add_episode(
                    name=episode_id,
                    episode_body=text,
                    source_description="record",
                    reference_time=reference_time,
                    source=EpisodeType.text,
                    group_id=self._group,
                )
            )
        except GraphitiReplyError as exc:
            raise GraphitiReplyError(f"graphiti could not add episode {episode_id!r}: {exc}") from None
        self._uuids[episode_id] = added.episode.uuid
        self._refs[added.episode.uuid] = episode_id
        self._stamps[episode_id] = timestamp
        if self._failures:  # a request failed and Graphiti went on without its answer
            more = f" (and {len(self._failures) - 1} more)" if len(self._failures) > 1 else ""
            raise GraphitiReplyError(
                f"graphiti added episode {episode_id!r} without the answer to a failed request, which it logged and skipped: "
                f"{self._failures[0]}{more}"
            )
        self._stats["episodes"] += 1
        self._stats["facts"] += len(added.edges)
        self._stats["entities"] += len(added.nodes)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Nothing to wait for: every ``add_episode`` finished in ``ingest``."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Graphiti's facts and entities (``fused``: and episodes), fused into a ranking of episodes; each shows what led to it."""
        if not query.strip() or self._graphiti is None or not self._uuids:
            return []
        limit = max(1, min(limit or 10, self._max_results))
        found = self._run(self._graphiti.search_(query, config=self._recipe(limit * 3), group_ids=[self._group]))
        fused: dict[str, float] = {}
        shown: dict[str, list[str]] = {}
        contents: dict[str, str] = {}

        def add(rank: int, refs: Any, line: str) -> None:
            for ref in dict.fromkeys(ref for ref in refs if ref is not None):  # None: an episode removed by a re-ingest
                if ref not in shown:
                    shown[ref] = []
                if len(shown[ref]) < 4 and line and line not in shown[ref]:
                    shown[ref].append(line)
                fused[ref] = fused.get(ref, 0.0) + 1.0 / (_RRF_K + rank)

        seen: set[tuple[str, str]] = set()
        for rank, edge in enumerate(found.edges, start=1):
            add(rank, self._first(seen, "edge", (self._refs.get(uuid) for uuid in edge.episodes)), edge.fact)
        mentions = self._mentions([node.uuid for node in found.nodes])
        for rank, node in enumerate(found.nodes, start=1):
            summary = " ".join(str(node.summary or "").split())
            line = f"{node.name}: {summary}" if summary else str(node.name)
            add(rank, self._first(seen, "node", (self._refs.get(uuid) for uuid in mentions.get(node.uuid, []))), line)
        for rank, episode in enumerate(found.episodes, start=1):  # search="fused" only
            ref = self._refs.get(episode.uuid)
            if ref is not None and ref not in contents:
                contents[ref] = episode.content
                add(rank, self._first(seen, "episode", [ref]), "")
        allowed = self._within_dates(fused, filters)
        order = sorted((ref for ref in fused if ref in allowed), key=lambda ref: (-fused[ref], ref))[:limit]
        results = []
        for ref in order:
            text = "\n".join(shown[ref])
            if ref in contents:
                text = "\n".join(part for part in (text, excerpt(contents[ref], self._snippet_chars)) if part)
            results.append(SearchResult(ref_id=ref, text=text, score=round(fused[ref], 6), metadata={"timestamp": allowed[ref]}))
        return results

    @staticmethod
    def _first(seen: set[tuple[str, str]], ranking: str, refs: Any) -> list[str]:
        """The refs not yet reached in this ranking: an episode counts once per ranking, at its best rank."""
        fresh = [ref for ref in refs if ref is not None and (ranking, ref) not in seen]
        seen.update((ranking, ref) for ref in fresh)
        return fresh

    def _mentions(self, node_uuids: list[str]) -> dict[str, list[str]]:
        """Entity uuid -> the uuids of the episodes that mention it (Graphiti's ``MENTIONS`` edges), in a stable order."""
        if not node_uuids:
            return {}
        records, _, _ = self._run(
            self._driver.execute_query(
                "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) WHERE n.uuid IN $uuids RETURN n.uuid AS node, e.uuid AS episode",
                uuids=node_uuids,
            )
        )
        mentions: dict[str, list[str]] = {}
        for record in records:
            mentions.setdefault(str(record["node"]), []).append(str(record["episode"]))
        order = {ref: index for index, ref in enumerate(self._uuids.values())}  # stream order of the episodes
        return {node: sorted(uuids, key=lambda uuid: order.get(uuid, len(order))) for node, uuids in mentions.items()}

    def _recipe(self, limit: int) -> Any:
        """Facts and entities by BM25 and cosine similarity (``fused``: and episodes by BM25), each fused by RRF: no request."""
        from graphiti_core.search.search_config import (
            EdgeReranker,
            EdgeSearchConfig,
            EdgeSearchMethod,
            EpisodeReranker,
            EpisodeSearchConfig,
            EpisodeSearchMethod,
            NodeReranker,
            NodeSearchConfig,
            NodeSearchMethod,
            SearchConfig,
        )

        edges = EdgeSearchConfig(search_methods=[EdgeSearchMethod.bm25, EdgeSearchMethod.cosine_similarity], reranker=EdgeReranker.rrf)
        nodes = NodeSearchConfig(search_methods=[NodeSearchMethod.bm25, NodeSearchMethod.cosine_similarity], reranker=NodeReranker.rrf)
        episodes = EpisodeSearchConfig(search_methods=[EpisodeSearchMethod.bm25], reranker=EpisodeReranker.rrf)
        return SearchConfig(edge_config=edges, node_config=nodes, episode_config=episodes if self._search == FUSED else None, limit=limit)

    def _within_dates(self, refs: dict[str, float], filters: dict[str, Any] | None) -> dict[str, str]:
        """``{ref: timestamp}`` of the refs whose episode lies in the filters' date range."""
        start, end = date_bounds(filters)
        stamps = {ref: self._stamps.get(ref, "") for ref in refs}
        return {
            ref: stamp for ref, stamp in stamps.items() if (start is None or stamp >= start) and (end is None or stamp <= end + "\uffff")
        }

    def _episode(self, ref_id: str) -> Any:
        from graphiti_core.nodes import EpisodicNode

        uuid = self._uuids.get(ref_id)
        return self._run(EpisodicNode.get_by_uuid(self._driver, uuid)) if uuid and self._driver is not None else None

    def retrieve(self, ref_id: str) -> Document | None:
        """The episode as Graphiti stored it; ``None`` for a ref it does not hold."""
        episode = self._episode(ref_id)
        if episode is None:
            return None
        return Document(ref_id=ref_id, text=str(episode.content), metadata={"timestamp": self._stamps.get(ref_id)})

    def get_capabilities(self) -> CapabilityManifest:
        """Graph search (facts and entities, not purely lexical) with a date range; no extra tools."""
        return CapabilityManifest(search_modes=["graph"], max_results_per_search=self._max_results, supports_date_range=True)

    def lens_stats(self) -> dict[str, int]:
        """Graphiti's LLM calls and tokens, episodes added, facts and entities it returned, and the embedding cache's counters."""
        return {**self._stats, **self._embedder.stats.as_counters()}

    def close(self) -> None:
        """Close Kuzu and the event loop; delete every file the adapter made."""
        try:
            self._shut()
        finally:
            self._loop.close()
            self._embedder.close()
            shutil.rmtree(self._root, ignore_errors=True)


def _lens_llm_client(adapter: GraphitiAdapter) -> Any:
    """Graphiti's ``LLMClient`` over the adapter's chat client."""
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig

    class LensLLMClient(LLMClient):
        async def _generate_response(
            self, messages: Any, response_model: Any = None, max_tokens: int = 2048, model_size: Any = None, *, model: str | None = None
        ) -> dict[str, Any]:
            return adapter._complete(messages, response_model, max_tokens)

    return LensLLMClient(LLMConfig(max_tokens=adapter._max_tokens))


def _lens_embedder(embedder: Any) -> Any:
    """Graphiti's ``EmbedderClient`` over the shared embedder."""
    from graphiti_core.embedder.client import EmbedderClient

    class LensEmbedder(EmbedderClient):
        async def create(self, input_data: Any) -> list[float]:
            return [float(x) for x in embedder.encode([str(input_data)])[0]]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return [[float(x) for x in row] for row in embedder.encode(list(input_data_list))] if input_data_list else []

    return LensEmbedder()


def _no_reranker() -> Any:
    """A cross-encoder slot that refuses: the adapter's search recipe never reranks with one."""
    from graphiti_core.cross_encoder.client import CrossEncoderClient

    class NoReranker(CrossEncoderClient):
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise RuntimeError("graphiti: no cross-encoder is configured offline; the adapter's search recipe uses RRF")

    return NoReranker()
