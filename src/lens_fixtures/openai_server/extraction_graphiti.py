"""Graphiti's model, scripted: well-formed structured replies to graphiti-core's prompts (0.31).

Graphiti asks for structured output by appending the response model's JSON schema to the
last message ("Respond with a JSON object in the following format: ..."); the schema's
``title`` names the reply it wants. This policy answers each from the prompt's own text,
deterministically:

- ``ExtractedEntities``: the record's named things (capitalised or hyphenated
  identifiers, words carrying a digit such as ``ZX-7Q`` or ``9.8``-free codes);
- ``ExtractedEdges``: per record line naming two of the given entities, one fact (the
  line itself) between the first two;
- ``NodeResolutions``: every entity new (no duplicate), ``EdgeDuplicate``: no duplicate
  or contradicted fact, ``EdgeTimestamps``: no dates, summaries: empty.

``malformed=True`` answers in prose (a small model ignoring the schema), for testing that
an unreadable reply becomes an adapter fault quoting Graphiti's message; ``empty=True`` extracts
nothing (no entity, no fact), every reply still well formed (the empty extractor's Graphiti role).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lens_fixtures.openai_server.names import named_things
from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["GRAPHITI_SCHEMA_MARKER", "GraphitiPolicy", "graphiti_reply_model"]

#: How graphiti-core's ``LLMClient.generate_response`` introduces the schema it appends.
GRAPHITI_SCHEMA_MARKER = "\n\nRespond with a JSON object in the following format:\n\n"
_GRAPHITI_MODELS = frozenset(
    {
        "ExtractedEntities",
        "ExtractedEdges",
        "NodeResolutions",
        "EdgeDuplicate",
        "EdgeTimestamps",
        "BatchEdgeTimestamps",
        "SummarizedEntities",
        "EntitySummary",
        "Summary",
        "SummaryDescription",
    }
)


def graphiti_reply_model(request: ChatRequest) -> str | None:
    """The response model a Graphiti request asks for (its schema's title), or ``None`` for another request."""
    if not request.messages:
        return None
    content = request.messages[-1].get("content")
    if not isinstance(content, str) or GRAPHITI_SCHEMA_MARKER not in content:
        return None
    schema = content.rpartition(GRAPHITI_SCHEMA_MARKER)[2]
    try:
        title = json.loads(schema).get("title")
    except (json.JSONDecodeError, AttributeError):
        return None
    return title if title in _GRAPHITI_MODELS else None


def _tagged(prompt: str, tag: str) -> str:
    start = prompt.find(f"<{tag}>")
    end = prompt.find(f"</{tag}>", start)
    return prompt[start + len(tag) + 2 : end].strip() if start >= 0 and end > start else ""


def _json_list(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def _named(line: str) -> list[str]:
    return named_things(line)


def _lines(text: str) -> list[str]:
    return [stripped for raw in text.splitlines() if (stripped := raw.strip().lstrip("-*• ").strip()) and not stripped.startswith("#")]


@dataclass
class GraphitiPolicy:
    """Answers graphiti-core's structured-output prompts (see the module docstring)."""

    malformed: bool = False
    empty: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """The reply for the response model the request names."""
        if self.malformed:
            return Reply(content="Sure! Here are the entities I found in the text: the pump and the road.")
        model = graphiti_reply_model(request)
        if self.empty and model in ("ExtractedEntities", "ExtractedEdges"):
            return Reply(content=json.dumps({"extracted_entities": []} if model == "ExtractedEntities" else {"edges": []}))
        prompt = str(request.messages[-1].get("content", "")) if request.messages else ""
        return Reply(content=json.dumps(self._reply(model, prompt)))

    @staticmethod
    def _reply(model: str | None, prompt: str) -> dict[str, Any]:
        if model == "ExtractedEntities":
            names = _named(_tagged(prompt, "TEXT") or _tagged(prompt, "CURRENT_MESSAGE"))
            return {"extracted_entities": [{"name": name, "entity_type_id": 0} for name in names]}
        if model == "ExtractedEdges":
            known = {str(item.get("name")) for item in _json_list(_tagged(prompt, "ENTITIES")) if isinstance(item, dict)}
            edges = []
            for line in _lines(_tagged(prompt, "CURRENT_MESSAGE")):
                named = [name for name in _named(line) if name in known]
                if len(named) >= 2:
                    edges.append(
                        {"source_entity_name": named[0], "target_entity_name": named[1], "relation_type": "APPEARS_WITH", "fact": line}
                    )
            return {"edges": edges}
        if model == "NodeResolutions":
            entities = [item for item in _json_list(_tagged(prompt, "ENTITIES")) if isinstance(item, dict)]
            return {
                "entity_resolutions": [
                    {"id": item.get("id", index), "name": str(item.get("name", "")), "duplicate_candidate_id": -1}
                    for index, item in enumerate(entities)
                ]
            }
        if model == "EdgeDuplicate":
            return {"duplicate_facts": [], "contradicted_facts": []}
        if model == "EdgeTimestamps":
            return {"valid_at": None, "invalid_at": None}
        if model == "BatchEdgeTimestamps":
            return {"timestamps": []}
        if model == "SummarizedEntities":
            return {"summaries": []}
        if model == "SummaryDescription":
            return {"description": ""}
        return {"summary": ""}
