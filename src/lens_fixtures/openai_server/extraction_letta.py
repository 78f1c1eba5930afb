"""The model of a Letta agent (the ``letta`` adapter with ``memorize``): it writes the record into core memory.

Letta's agent loop (agent type ``memgpt_v2_agent``) asks for one tool call per step, with
its tools offered (``send_message``, ``conversation_search``
and the memory-editing tools ``memory_insert`` and ``memory_replace``; ``tool_choice`` is
``required``). A request is Letta's when both ``send_message`` and ``conversation_search``
are offered. The scripted reply:

- when the newest message is the user's record: a call of the memory tool Letta offers
  (``memory_insert`` with ``new_str``, else ``core_memory_append`` with ``content``) on the
  ``human`` block, its text the record's first line carrying a number (headings left out; its
  first line when none does), with ``request_heartbeat`` true when the tool takes one, so Letta asks again;
- once a tool result follows the record (Letta then adds a ``heartbeat`` user message of its
  own): ``send_message`` with a short acknowledgement, which ends the turn.

``malformed=True`` answers the memory step in prose, with no tool call (a small model ignoring
``tool_choice="required"``), for testing that Letta's refusal becomes an adapter fault. (Tool-call
arguments cut off mid-object are no test of that: Letta repairs partial JSON and runs the call.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["LettaAgentPolicy", "is_letta_request"]

_LETTA_TOOLS = {"send_message", "conversation_search"}
_MEMORY_TOOLS = (("memory_insert", "new_str"), ("core_memory_append", "content"))


def is_letta_request(request: ChatRequest) -> bool:
    """Whether the request is a step of a Letta agent (its base tools are offered)."""
    return set(request.tool_names) >= _LETTA_TOOLS


def _tool_parameters(request: ChatRequest, name: str) -> dict[str, Any]:
    for tool in request.body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            parameters = function.get("parameters")
            return parameters.get("properties", {}) if isinstance(parameters, dict) else {}
    return {}


def _envelope(content: Any) -> bool:
    """Whether a user message is one of Letta's own (login, heartbeat, system alert: a JSON object with a ``type``)."""
    try:
        data = json.loads(str(content))
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("type") in {"login", "heartbeat", "system_alert"}


def _record(content: Any) -> str:
    """The user's text: Letta wraps it in a JSON envelope (``{"type": "user_message", "message": ...}``) or not."""
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    text = str(content or "")
    try:
        envelope = json.loads(text)
    except ValueError:
        return text
    return str(envelope.get("message", text)) if isinstance(envelope, dict) else text


@dataclass
class LettaAgentPolicy:
    """Answers Letta's agent steps (see the module docstring)."""

    malformed: bool = False

    def __call__(self, request: ChatRequest) -> Reply:
        """A memory-tool call for a new record, ``send_message`` after a tool result."""
        messages = request.messages
        records = [index for index, m in enumerate(messages) if m.get("role") == "user" and not _envelope(m.get("content"))]
        newest = records[-1] if records else -1
        if any(m.get("role") == "tool" for m in messages[newest + 1 :]):  # the record was handled (Letta's heartbeat follows)
            return Reply(tool_calls=(("send_message", {"message": "Noted."}),))
        user = messages[newest] if records else {}
        lines = [line.strip() for line in _record(user.get("content")).splitlines() if line.strip()]
        lines = [line.lstrip("-*• ") for line in lines if not line.lower().startswith(("record (", "#"))] or lines
        fact = next((line for line in lines if any(ch.isdigit() for ch in line)), lines[0] if lines else "")
        offered = set(request.tool_names)
        name, field = next(((tool, key) for tool, key in _MEMORY_TOOLS if tool in offered), _MEMORY_TOOLS[0])
        if self.malformed:  # prose instead of the tool call Letta requires (tool_choice "required")
            return Reply(content=f"Sure! I will remember that: {fact}")
        arguments: dict[str, Any] = {"label": "human", field: fact}
        if "request_heartbeat" in _tool_parameters(request, name):
            arguments["request_heartbeat"] = True
        return Reply(tool_calls=((name, arguments),))
