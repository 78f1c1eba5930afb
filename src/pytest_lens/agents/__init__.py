"""Answering agents and their registry."""

from __future__ import annotations

import importlib
from typing import Any

from pytest_lens.agents.base import SYSTEM_PROMPT, Agent, AgentAnswer, AgentQuestion

__all__ = ["AGENTS", "SYSTEM_PROMPT", "Agent", "AgentAnswer", "AgentQuestion", "agent_class", "create_agent"]

#: ``--lens-agent`` names and the classes behind them (imported on use).
AGENTS: dict[str, str] = {
    "offline": "pytest_lens.agents.offline:OfflineAgent",
    "llm": "pytest_lens.agents.llm:LLMAgent",
}


def agent_class(name: str) -> type[Any]:
    """The class registered as ``name``; :class:`ValueError` naming the choices when unknown."""
    try:
        target = AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; available: {', '.join(sorted(AGENTS))}") from None
    module_name, _, class_name = target.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module_name), class_name)
    return cls


def create_agent(name: str, **options: Any) -> Agent:
    """Instantiate the agent registered as ``name``."""
    agent: Agent = agent_class(name)(**options)
    return agent
