"""Cognee's model, scripted: well-formed replies to the structured-output prompts ``cognify`` sends.

Cognee (1.6, its default ``litellm_native`` structured output) asks an endpoint it does not know
for JSON: its system prompt ends with "You MUST respond with valid JSON conforming to this
schema:" and the pydantic model's JSON schema, whose ``title`` names what it wants. Per chunk,
``cognify`` asks for a ``KnowledgeGraph`` (nodes and edges) and a ``SummarizedContent`` (a
bulleted summary). This policy answers both deterministically from the chunk's own text: the
chunk's named things (capitalised or hyphenated words, numbers with their unit) are the nodes,
each line naming two of them an edge between them, and the summary is the chunk's lines as bullets.
Any other schema gets the smallest object its required fields allow.

``malformed=True`` answers in prose instead (a small model ignoring the JSON it was asked for), for
testing that an unreadable extraction is an adapter fault quoting Cognee's validation error.

:class:`~lens_fixtures.openai_server.policies.LensPolicy` answers Cognee's prompts with this role (its ``cognee``;
``LensPolicy(cognee=CogneePolicy(malformed=True))`` for the fault tests).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lens_fixtures.openai_server.names import named_things
from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["SCHEMA_MARKER", "CogneePolicy", "cognee_schema", "minimal_object"]

#: How Cognee's JSON fallback introduces the schema in the system prompt (cognee 1.6).
SCHEMA_MARKER = "You MUST respond with valid JSON conforming to this schema:"
_SCHEMA = re.compile(r"```json\n(?P<schema>.*?)\n```", re.DOTALL)


def cognee_schema(request: ChatRequest) -> dict[str, Any] | None:
    """The JSON schema a Cognee structured-output request asks for, or ``None`` for any other request."""
    system = request.system
    start = system.find(SCHEMA_MARKER)
    if start < 0:
        return None
    match = _SCHEMA.search(system, start)
    if match is None:
        return None
    try:
        schema = json.loads(match.group("schema"))
    except json.JSONDecodeError:
        return None
    return schema if isinstance(schema, dict) else None


def _text(request: ChatRequest) -> str:
    """The chunk Cognee sent, without the validation feedback of a retry."""
    text = str(request.messages[-1].get("content", "")) if request.messages else ""
    return text.split("\n\nYour previous response failed validation", 1)[0]


def _lines(text: str) -> list[str]:
    return [line for raw in text.splitlines() if (line := raw.strip().lstrip("-*• ").strip()) and not line.startswith("#")]


@dataclass
class CogneePolicy:
    """Answers Cognee's ``KnowledgeGraph`` and ``SummarizedContent`` prompts (see the module docstring)."""

    malformed: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """The JSON object the request's schema asks for, built from the chunk's text."""
        schema = cognee_schema(request) or {}
        if self.malformed:
            return Reply(content="Sure! Here is what the text says: the pump is vibrating more than yesterday.")
        title = schema.get("title")
        text = _text(request)
        if title == "KnowledgeGraph":
            return Reply(content=json.dumps(self._graph(text)))
        if title == "SummarizedContent":
            bullets = "\n".join(f"- {line}" for line in _lines(text))
            return Reply(content=json.dumps({"summary": f"A record.\n{bullets}", "description": ""}))
        return Reply(content=json.dumps(minimal_object(schema)))

    @staticmethod
    def _graph(text: str) -> dict[str, Any]:
        nodes: dict[str, dict[str, str]] = {}
        edges = []
        for line in _lines(text):
            named = named_things(line, units=True)
            for name in named:
                nodes.setdefault(name.lower(), {"id": name.lower(), "name": name, "type": "Thing", "description": line})
            if len(named) >= 2:
                edges.append({"source_node_id": named[0].lower(), "target_node_id": named[1].lower(), "relationship_name": "appears_with"})
        return {"nodes": list(nodes.values()), "edges": edges}


def minimal_object(schema: dict[str, Any]) -> dict[str, Any]:
    """An object with every required property of ``schema`` at its simplest value."""
    simple = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    properties = schema.get("properties") or {}
    return {name: simple.get(str(properties.get(name, {}).get("type"))) for name in schema.get("required") or []}
