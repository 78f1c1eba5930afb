"""The empty extractor: every memory-building request answered well formed, with nothing in it.

A memory that a model builds (facts, entities, edges, summaries, core memory) is only worth
scoring if its score depends on what the model built. This role answers each system's
memory-building prompt in the format the system asks for, extracting nothing:

| system | request | empty reply |
|---|---|---|
| mem0 (``infer=True``) | fact extraction (JSON mode) | ``{"memory": []}`` |
| graphrag-light | entity graph (JSON mode) | ``{"entities": [], "relations": []}`` |
| Graphiti | ``ExtractedEntities`` / ``ExtractedEdges`` (its schema) | no entity, no fact (its other steps answered as scripted) |
| Cognee | ``KnowledgeGraph`` / ``SummarizedContent`` (its schema) | no node, no edge; an empty summary |
| Letta (``letta-memorize``) | an agent step (tools, ``tool_choice`` required) | ``send_message``: no memory tool is called |
| hierarchical, compaction | a summary (text) | :data:`EMPTY_SUMMARY` (an empty reply would be a fault) |
| any other request | JSON schema / JSON mode / text | the schema's required fields at their simplest / ``{}`` / :data:`EMPTY_SUMMARY` |

With a ``base`` policy (``python -m lens_fixtures.openai_server --empty-extraction`` uses
:class:`~lens_fixtures.openai_server.policies.LensPolicy`), every other role (agent, judge,
baseline) is answered by it, so a whole LENS run can use the server; without one (the
empty-extraction control of ``--lens-controls``, whose adapter sends nothing else), every
request gets an empty reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lens_fixtures.openai_server.extraction import extraction_kind
from lens_fixtures.openai_server.extraction_cognee import cognee_schema, minimal_object
from lens_fixtures.openai_server.extraction_graphiti import GraphitiPolicy
from lens_fixtures.openai_server.extraction_letta import is_letta_request
from lens_fixtures.openai_server.requests import ChatRequest, Policy, Reply

__all__ = ["EMPTY_SUMMARY", "EmptyExtractionPolicy", "serve_empty_extractor"]

#: A summary that says nothing (one word no question is likely to share).
EMPTY_SUMMARY = "Nothing."


@dataclass
class EmptyExtractionPolicy:
    """Answers every memory-building prompt with a well-formed reply that extracts nothing (see the module docstring)."""

    #: The policy for requests that build no memory (agent, judge, baseline); ``None``: those get an empty reply too.
    base: Policy | None = None
    _graphiti: GraphitiPolicy = field(default_factory=lambda: GraphitiPolicy(empty=True))

    def __call__(self, request: ChatRequest) -> Reply:
        """The empty reply in the request's format, or the base policy's reply to a request that builds no memory."""
        kind = extraction_kind(request)
        if kind == "mem0":
            return Reply(content=json.dumps({"memory": []}))
        if kind == "graph":
            return Reply(content=json.dumps({"entities": [], "relations": []}))
        if kind == "graphiti":
            return self._graphiti(request)
        if (schema := cognee_schema(request)) is not None:
            return Reply(content=json.dumps(_empty_cognee(schema)))
        if is_letta_request(request):
            return Reply(tool_calls=(("send_message", {"message": "Noted."}),))
        if _summary_request(request):
            return Reply(content=EMPTY_SUMMARY)
        if self.base is not None:
            return self.base(request)
        return _empty_reply(request)


def _empty_cognee(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("title") == "KnowledgeGraph":
        return {"nodes": [], "edges": []}
    if schema.get("title") == "SummarizedContent":
        return {"summary": "", "description": ""}
    return minimal_object(schema)


def _summary_request(request: ChatRequest) -> bool:
    """A summary the hierarchical or compaction memory asks for (an empty reply would be their fault, not a summary)."""
    from lens_fixtures.adapters.compaction import SUMMARY_SYSTEM_PROMPT
    from lens_fixtures.adapters.hierarchical import PROMPTS

    return request.system == SUMMARY_SYSTEM_PROMPT or request.system in PROMPTS


def _empty_reply(request: ChatRequest) -> Reply:
    """The emptiest well-formed reply to a request of a system this module does not know, by the format it asks for."""
    response_format = request.body.get("response_format")
    if isinstance(response_format, dict):
        schema = (response_format.get("json_schema") or {}).get("schema") if response_format.get("type") == "json_schema" else None
        return Reply(content=json.dumps(minimal_object(schema) if isinstance(schema, dict) else {}))
    return Reply(content=EMPTY_SUMMARY)


def serve_empty_extractor() -> Any:
    """A started :class:`~lens_fixtures.openai_server.server.OpenAITestServer` answering every request empty.

    The empty-extraction control of ``--lens-controls`` loads this by name (the core never imports ``lens_fixtures``)
    and points the control's adapter at it; ``stop()`` ends it.
    """
    from lens_fixtures.openai_server.server import OpenAITestServer

    return OpenAITestServer(EmptyExtractionPolicy()).start()
