"""A chat-completions request as the scripted policies read it, and the reply a policy gives."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ChatRequest", "Policy", "Reply", "json_value"]


@dataclass(frozen=True)
class Reply:
    """What the model "says": text, or tool calls as ``(name, arguments)`` (a dict, or raw JSON text)."""

    content: str = ""
    tool_calls: tuple[tuple[str, Mapping[str, Any] | str], ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """A chat-completions request body with the views policies need."""

    body: Mapping[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation."""
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered."""
        names = []
        for tool in self.body.get("tools") or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names

    @property
    def tool_choice(self) -> Any:
        """The ``tool_choice`` parameter (``None`` when not sent)."""
        return self.body.get("tool_choice")

    @property
    def may_call_tools(self) -> bool:
        """Tools are offered and not switched off with ``tool_choice="none"``."""
        return bool(self.tool_names) and self.tool_choice != "none"

    def _content(self, role: str, last: bool) -> str:
        found = [m.get("content") for m in self.messages if m.get("role") == role and isinstance(m.get("content"), str)]
        return str(found[-1] if last else found[0]) if found else ""

    @property
    def system(self) -> str:
        """The first system message."""
        return self._content("system", last=False)

    @property
    def first_user(self) -> str:
        """The first user message (the question, or the judge prompt)."""
        return self._content("user", last=False)

    @property
    def assistant_turns(self) -> int:
        """Assistant messages so far (the turn this request asks for is one more)."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    def tool_exchanges(self) -> list[tuple[str, Any, str]]:
        """``(tool name, parsed arguments or None, result text)`` for every tool result, in order."""
        calls: dict[str, tuple[str, Any]] = {}
        exchanges = []
        for message in self.messages:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function", {}) if isinstance(call, dict) else {}
                    calls[str(call.get("id"))] = (str(function.get("name")), json_value(function.get("arguments")))
            elif message.get("role") == "tool":
                name, args = calls.get(str(message.get("tool_call_id")), ("?", None))
                exchanges.append((name, args, str(message.get("content") or "")))
        return exchanges


Policy = Callable[[ChatRequest], Reply]


def json_value(text: Any) -> Any:
    """``text`` parsed as JSON; ``None`` when it is not a string or not JSON."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None
