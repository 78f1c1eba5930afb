"""GraphRAG-light: an LLM-built entity graph over the episodes, searched together with BM25 (no extra install).

The design follows the LENS reference's graph memories (``graphrag_light`` and its
multi-hop ``hopping`` variant), re-implemented here:

- ``ingest`` stores the episode verbatim and indexes it for BM25 (SQLite FTS5); no
  LLM call, so ingestion stays cheap and in stream order.
- ``prepare`` is the barrier where the graph is built: every episode not yet read is
  sent to the model (one JSON-mode chat completion each, through the run's endpoint and
  request cache), which names its entities and the relations it states. Each entity
  and relation keeps the episode it came from, so every graph result leads back to an
  episode ref. An episode is read on its own, so the graph at checkpoint N depends only
  on the first N episodes, whatever checkpoints were prepared before.
- A reply that is not the JSON asked for raises :class:`ExtractionReplyError` naming the
  episode and quoting the reply: an adapter fault, never an episode silently left out.
- ``search`` is the graph's local search (the default, ``search="memory"``): the entities the
  query names, then their neighbours up to ``hops`` relations away, each leading to the episodes
  that mention them; a result shows the relations and entities that led to it. A graph the model
  left empty finds nothing. ``search="fused"`` fuses that ranking (reciprocal rank fusion, k=60)
  with the BM25 ranking of the raw episodes, the design of the LENS reference's memories.
- ``graph_neighbors`` (an extra tool) shows an entity's relations, each with its episode.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from lens_fixtures.adapters.bm25 import BM25Adapter
from lens_fixtures.adapters.model_required import require_llm
from lens_fixtures.adapters.search_modes import FUSED, search_mode
from pytest_lens import CapabilityManifest, ExtraTool, SearchResult
from pytest_lens.contract.schema import schema_validator
from pytest_lens.text import content_terms, normalize

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["GRAPH_EXTRACTION_PROMPT", "GRAPH_NEIGHBORS", "ExtractionReplyError", "GraphRAGLightAdapter", "parse_graph_extraction"]

GRAPH_EXTRACTION_PROMPT = (
    "You build a knowledge graph from operational records. From the record below, list the entities it names "
    "(services, systems, components, people, teams, organisations, metrics, places) and the relations between them "
    "that the record states. Use each name exactly as the record writes it. Reply with one JSON object and nothing "
    'else: {"entities": [{"name": "...", "type": "...", "description": "..."}], '
    '"relations": [{"source": "...", "relation": "...", "target": "..."}]}'
)
GRAPH_NEIGHBORS = ExtraTool(
    name="graph_neighbors",
    description="The relations of one entity in the memory's knowledge graph, each with the record it came from.",
    parameters={
        "type": "object",
        "properties": {"entity": {"type": "string", "minLength": 1, "maxLength": 200}},
        "required": ["entity"],
        "additionalProperties": False,
    },
)
_ALL_ENTITY_KEYS = (
    "SELECT key FROM graph_entities UNION SELECT source_key FROM graph_relations UNION SELECT target_key FROM graph_relations"
)
_RELATIONS_OF = (
    "SELECT source_key, target_key, source, relation, target, ref_id FROM graph_relations WHERE source_key IN ({0}) OR target_key IN ({0})"
)


class ExtractionReplyError(ValueError):
    """The model's extraction reply is not the JSON the memory asked for."""


def parse_graph_extraction(reply: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """``(entities as (name, type, description), relations as (source, relation, target))`` of a reply.

    :class:`ExtractionReplyError` says what is wrong: not a JSON object, a missing list, an item without its
    name fields. A code fence around the object is accepted (small models add one even in JSON mode).
    """
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExtractionReplyError(f"the reply is not JSON ({exc}): {_shown(reply)}") from None
    if not isinstance(data, dict):
        raise ExtractionReplyError(f"the reply is a JSON {type(data).__name__}, not an object: {_shown(reply)}")
    entities, relations = data.get("entities"), data.get("relations", [])
    if not isinstance(entities, list) or not isinstance(relations, list):
        raise ExtractionReplyError(f"the reply needs 'entities' and 'relations' lists (keys: {sorted(data)}): {_shown(reply)}")
    parsed_entities = []
    for index, item in enumerate(entities):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise ExtractionReplyError(f"entity {index} has no 'name' string: {_shown(reply)}")
        parsed_entities.append((item["name"].strip(), str(item.get("type") or ""), str(item.get("description") or "")))
    parsed_relations = []
    for index, item in enumerate(relations):
        fields = [item.get(key) if isinstance(item, dict) else None for key in ("source", "relation", "target")]
        if not all(isinstance(value, str) and value.strip() for value in fields):
            raise ExtractionReplyError(f"relation {index} needs 'source', 'relation' and 'target' strings: {_shown(reply)}")
        parsed_relations.append((str(fields[0]).strip(), str(fields[1]).strip(), str(fields[2]).strip()))
    return parsed_entities, parsed_relations


def _shown(reply: str) -> str:
    flat = " ".join(reply.split())
    return repr(flat[:200] + ("..." if len(flat) > 200 else ""))


def _key(name: str) -> str:
    return " ".join(normalize(name).split())


class GraphRAGLightAdapter(BM25Adapter):
    """Episodes in FTS5 plus an entity graph the run's model extracts at ``prepare``; search reads the graph.

    Options: ``model`` (the extraction model; the run's by default), ``extraction_max_tokens`` (1024),
    ``hops`` (1: how far the graph ranking follows relations from the entities the query names),
    ``search`` (``memory``: the graph's local search; ``fused``: fused with BM25 over the raw episodes),
    ``snippet_tokens`` and ``max_results`` as for ``bm25``.
    """

    database_prefix = "graphrag-light"
    lens_isolated_instances = True
    lens_model_built = True

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        extraction_max_tokens: int = 1024,
        hops: int = 1,
        search: str = "memory",
        snippet_tokens: int = 48,
        max_results: int = 20,
    ) -> None:
        lens_llm = require_llm(lens_llm, "graphrag-light needs an LLM to extract its graph")
        if hops < 0:
            raise ValueError(f"hops must be 0 or more, got {hops}")
        self._llm = (lens_llm.with_model(model) if model else lens_llm).with_max_tokens(extraction_max_tokens)
        self._hops = hops
        self._search = search_mode(search, "graphrag-light")
        self._stats = {
            "extraction_calls": 0,
            "extraction_prompt_tokens": 0,
            "extraction_completion_tokens": 0,
            "entities": 0,
            "relations": 0,
        }
        super().__init__(storage_dir, snippet_tokens=snippet_tokens, max_results=max_results)

    def _create(self) -> None:
        super()._create()
        for table in ("graph_read", "graph_entities", "graph_relations"):
            self._db.execute(f"DROP TABLE IF EXISTS {table}")
        self._db.execute("CREATE TABLE graph_read (ref_id TEXT PRIMARY KEY)")
        self._db.execute("CREATE TABLE graph_entities (key TEXT, name TEXT, type TEXT, description TEXT, ref_id TEXT)")
        self._db.execute(
            "CREATE TABLE graph_relations (source_key TEXT, target_key TEXT, source TEXT, relation TEXT, target TEXT, ref_id TEXT)"
        )
        self._db.execute("CREATE INDEX graph_entities_key ON graph_entities (key)")
        self._db.execute("CREATE INDEX graph_relations_source ON graph_relations (source_key)")
        self._db.execute("CREATE INDEX graph_relations_target ON graph_relations (target_key)")

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store and index the episode; a re-ingested id loses its graph until the next ``prepare``."""
        with self._db:
            for table in ("graph_read", "graph_entities", "graph_relations"):
                self._db.execute(f"DELETE FROM {table} WHERE ref_id = ?", [episode_id])
        super().ingest(episode_id, scope_id, timestamp, text, meta)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Extract the graph of every episode not yet read, in stream order (the barrier before questions)."""
        pending = self._db.execute(
            "SELECT ref_id, timestamp, text FROM episodes WHERE ref_id NOT IN (SELECT ref_id FROM graph_read) ORDER BY rowid"
        ).fetchall()
        for ref_id, timestamp, text in pending:
            entities, relations = self._extract(ref_id, timestamp, text)
            with self._db:
                self._db.executemany(
                    "INSERT INTO graph_entities VALUES (?, ?, ?, ?, ?)",
                    [(_key(name), name, kind, description, ref_id) for name, kind, description in entities if _key(name)],
                )
                self._db.executemany(
                    "INSERT INTO graph_relations VALUES (?, ?, ?, ?, ?, ?)",
                    [(_key(s), _key(t), s, r, t, ref_id) for s, r, t in relations if _key(s) and _key(t)],
                )
                self._db.execute("INSERT INTO graph_read VALUES (?)", [ref_id])
            self._stats["entities"] += len(entities)
            self._stats["relations"] += len(relations)

    def _extract(self, ref_id: str, timestamp: str, text: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        # The record is shown by timestamp only: ids may encode dataset labels.
        messages = [
            {"role": "system", "content": GRAPH_EXTRACTION_PROMPT},
            {"role": "user", "content": f"Record ({timestamp}):\n{text.strip()}"},
        ]
        reply = self._llm.complete(messages, response_format={"type": "json_object"}, purpose="graphrag-light")
        self._stats["extraction_calls"] += 1
        if reply.usage is not None:
            self._stats["extraction_prompt_tokens"] += reply.usage.prompt_tokens
            self._stats["extraction_completion_tokens"] += reply.usage.completion_tokens
        try:
            return parse_graph_extraction(reply.content)
        except ExtractionReplyError as exc:
            raise ExtractionReplyError(f"graphrag-light could not read the graph extracted from episode {ref_id!r}: {exc}") from None

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The graph's local search (``fused``: fused with BM25); each hit shows the relations and entities that led to it."""
        limit = max(1, min(limit or 10, self._max_results))
        graph = self._graph_rank(query, filters, limit * 2)
        lexical = self.rank(query, filters, limit * 2) if self._search == FUSED else []
        return self.fused(lexical, [ref for ref, _ in graph], dict(graph), limit)

    def _matched_entities(self, query: str) -> set[str]:
        """Keys of entities the query names: every content word of the entity's name is in the query."""
        terms = set(content_terms(query))
        if not terms:
            return set()
        keys = {key for (key,) in self._db.execute(_ALL_ENTITY_KEYS)}
        return {key for key in keys if (name_terms := content_terms(key)) and set(name_terms) <= terms}

    def _graph_rank(self, query: str, filters: dict[str, Any] | None, limit: int) -> list[tuple[str, str]]:
        """``(ref_id, why)`` for episodes that mention the query's entities or their neighbours, closest and most first."""
        frontier = self._matched_entities(query)
        seen = set(frontier)
        weights: dict[str, float] = {}
        why: dict[str, list[str]] = {}
        for depth in range(self._hops + 1):
            if not frontier:
                break
            marks = ",".join("?" * len(frontier))
            keys = sorted(frontier)
            for ref, name, description in self._db.execute(
                f"SELECT ref_id, name, description FROM graph_entities WHERE key IN ({marks}) ORDER BY rowid", keys
            ):
                weights[ref] = weights.get(ref, 0.0) + 1.0 / (depth + 1)
                line = f"{name}: {description}" if description else name
                if line not in why.setdefault(ref, []):
                    why[ref].append(line)
            rows = self._db.execute(_RELATIONS_OF.format(marks), keys + keys).fetchall()
            following: set[str] = set()
            for source_key, target_key, source, relation, target, ref in rows:
                weights[ref] = weights.get(ref, 0.0) + 1.0 / (depth + 1)
                line = f"{source} -[{relation}]-> {target}"
                if line not in why.setdefault(ref, []):
                    why[ref].append(line)
                following.update(k for k in (source_key, target_key) if k not in seen)
            seen |= following
            frontier = following
        allowed = self.within_dates(weights, filters)
        ranked = sorted((ref for ref in weights if ref in allowed), key=lambda ref: (-weights[ref], ref))[:limit]
        # Relations first (they say more than a name), then the entities.
        return [(ref, "\n".join(sorted(why.get(ref, []), key=lambda line: " -[" not in line)[:5])) for ref in ranked]

    def get_capabilities(self) -> CapabilityManifest:
        """Graph-fused search (not purely lexical), a date range, ``batch_retrieve`` and ``graph_neighbors``."""
        return CapabilityManifest(
            search_modes=["graph"],
            max_results_per_search=self._max_results,
            supports_date_range=True,
            extra_tools=[BATCH_RETRIEVE, GRAPH_NEIGHBORS],
        )

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``, or ``graph_neighbors``: ``{"entity", "relations": [...], "mentioned_in": [...]}``."""
        if name == BATCH_RETRIEVE.name:
            return batch_payload(batch_ref_ids(args), self.retrieve)
        if name != GRAPH_NEIGHBORS.name:
            return super().call_extended_tool(name, args)
        schema_validator(GRAPH_NEIGHBORS.parameters).validate(args)
        key = _key(args["entity"])
        rows = self._db.execute(
            "SELECT source, relation, target, ref_id FROM graph_relations WHERE source_key = ? OR target_key = ? ORDER BY rowid LIMIT 50",
            [key, key],
        ).fetchall()
        mentioned = [ref for (ref,) in self._db.execute("SELECT DISTINCT ref_id FROM graph_entities WHERE key = ? ORDER BY rowid", [key])]
        relations = [{"source": s, "relation": r, "target": t, "ref_id": ref} for s, r, t, ref in rows]
        return {"entity": args["entity"], "relations": relations, "mentioned_in": mentioned}

    def lens_stats(self) -> dict[str, int]:
        """Extraction calls and tokens, entities and relations extracted."""
        return dict(self._stats)
