"""The model of a Letta agent (the ``letta`` adapter with ``memorize``): it writes the record into core memory.

Letta's agent loop (agent type ``memgpt_v2_agent``) asks for one tool call per step, with
its tools offered (``send_message``, ``archival_memory_insert``, ``conversation_search``
and the memory-editing tools). A request is Letta's when both ``send_message`` and
``archival_memory_insert`` are offered. The scripted reply:

- when the newest message is the user's record: a call of the memory tool Letta offers
  (``memory_insert`` with ``new_str``, else ``core_memory_append`` with ``content``) on the
  ``human`` block, its text the record's first line carrying a number (its first line when
  none does), with ``request_heartbeat`` true when the tool takes one, so Letta asks again;
- after a tool result: ``send_message`` with a short acknowledgement, which ends the turn.

``malformed=True`` answers the memory step with arguments that are not JSON (a small model
breaking off mid-object), for testing that Letta's refusal becomes an adapter fault.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["LettaAgentPolicy", "is_letta_request"]

_LETTA_TOOLS = {"send_message", "archival_memory_insert"}
_MEMORY_TOOLS = (("memory_insert", "new_str"), ("core_memory_append", "content"))


def is_letta_request(request: ChatRequest) -> bool:
    """Whether the request is a step of a Letta agent (its base tools are offered)."""
    return _LETTA_TOOLS <= set(request.tool_names)


def _tool_parameters(request: ChatRequest, name: str) -> dict[str, Any]:
    for tool in request.body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            parameters = function.get("parameters")
            return parameters.get("properties", {}) if isinstance(parameters, dict) else {}
    return {}


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
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return Reply(tool_calls=(("send_message", {"message": "Noted."}),))
        user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        lines = [line.strip() for line in _record(user.get("content")).splitlines() if line.strip()]
        lines = [line for line in lines if not line.lower().startswith("record (")] or lines
        fact = next((line for line in lines if any(ch.isdigit() for ch in line)), lines[0] if lines else "")
        offered = set(request.tool_names)
        name, field = next(((tool, key) for tool, key in _MEMORY_TOOLS if tool in offered), _MEMORY_TOOLS[0])
        if self.malformed:
            return Reply(tool_calls=((name, '{"label": "human", "' + field + '": "' + fact[:20]),))
        arguments: dict[str, Any] = {"label": "human", field: fact}
        if "request_heartbeat" in _tool_parameters(request, name):
            arguments["request_heartbeat"] = True
        return Reply(tool_calls=((name, arguments),))
