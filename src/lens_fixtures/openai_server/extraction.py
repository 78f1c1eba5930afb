"""The extraction model of the LLM-built memories: mem0's fact extraction and GraphRAG-light's entity graph.

Replies are well-formed JSON built from the record's own lines, deterministically, so a
memory built from them holds the stream's real values: mem0 gets one fact per record
line carrying a number (the whole text when none does), dated with the observation
date of the prompt; GraphRAG-light gets the record's named things (capitalised or
hyphenated identifiers) as entities and, per line naming two, a relation between them.

``malformed=True`` answers in prose instead (a small model ignoring JSON mode), for
testing that an unreadable extraction becomes an adapter fault.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from lens_fixtures.openai_server.extraction_graphiti import GraphitiPolicy, graphiti_reply_model
from lens_fixtures.openai_server.names import named_things
from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["ExtractionPolicy", "extraction_kind"]

#: How mem0's extraction system prompt introduces itself (mem0ai 2.2).
MEM0_MARKER = "You are a Memory Extractor"


def extraction_kind(request: ChatRequest) -> str | None:
    """``mem0``, ``graph`` or ``graphiti`` for an extraction request of those memories, else ``None``."""
    from lens_fixtures.adapters.graphrag_light import GRAPH_EXTRACTION_PROMPT

    system = request.system
    if system == GRAPH_EXTRACTION_PROMPT:
        return "graph"
    if MEM0_MARKER in system:
        return "mem0"
    if graphiti_reply_model(request) is not None:
        return "graphiti"
    return None


def _section(prompt: str, title: str) -> str:
    head = f"## {title}\n"
    start = prompt.find(head)
    if start < 0:
        return ""
    body = prompt[start + len(head) :]
    end = body.find("\n\n## ")
    return body if end < 0 else body[:end]


def _lines(text: str) -> list[str]:
    return [stripped for raw in text.splitlines() if (stripped := raw.strip().lstrip("-*• ").strip()) and not stripped.startswith("#")]


@dataclass
class ExtractionPolicy:
    """Answers mem0 and GraphRAG-light extraction prompts (see the module docstring)."""

    malformed: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """The extraction reply for the request's kind."""
        kind = extraction_kind(request)
        if kind == "graphiti":
            return GraphitiPolicy(malformed=self.malformed)(request)
        if self.malformed:
            return Reply(content="Sure! The record mentions several things worth remembering, listed below.\n- the checkout service")
        if kind == "mem0":
            return Reply(content=json.dumps({"memory": self._facts(request)}))
        return Reply(content=json.dumps(self._graph(request)))

    @staticmethod
    def _facts(request: ChatRequest) -> list[dict[str, str]]:
        prompt = request.messages[-1].get("content", "") if request.messages else ""
        prompt = str(prompt)
        # "## New Messages" runs to the "## Observation Date" section; the record itself may hold blank lines.
        start = prompt.find("## New Messages\n")
        end = prompt.find("\n\n## Observation Date")
        record = prompt[start + len("## New Messages\n") : end] if start >= 0 and end > start else ""
        record = record.removeprefix("user: ")
        date = _section(prompt, "Observation Date").strip()
        lines = _lines(record)
        numbered = [line for line in lines if any(ch.isdigit() for ch in line)]
        chosen = numbered or ([" ".join(record.split())] if record.strip() else [])
        return [
            {"id": str(index), "text": f"On {date}: {line}" if date else line, "attributed_to": "user"} for index, line in enumerate(chosen)
        ]

    @staticmethod
    def _graph(request: ChatRequest) -> dict[str, list[dict[str, str]]]:
        text = str(request.messages[-1].get("content", "")) if request.messages else ""
        record = text.partition("\n")[2]
        entities: dict[str, None] = {}
        relations = []
        for line in _lines(record):
            named = named_things(line)
            entities.update(dict.fromkeys(named))
            if len(named) >= 2:
                relations.append({"source": named[0], "relation": "appears with", "target": named[1]})
        return {
            "entities": [{"name": name, "type": "thing", "description": ""} for name in entities],
            "relations": relations,
        }
