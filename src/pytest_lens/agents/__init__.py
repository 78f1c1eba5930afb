"""Answering agents and their registry."""

from __future__ import annotations

import importlib
from typing import Any

from pytest_lens.agents.base import SYSTEM_PROMPT, Agent, AgentAnswer, AgentQuestion

__all__ = ["AGENTS", "SYSTEM_PROMPT", "Agent", "AgentAnswer", "AgentQuestion", "create_agent"]

#: ``--lens-agent`` names and the classes behind them (imported on use).
AGENTS: dict[str, str] = {
    "offline": "pytest_lens.agents.offline:OfflineAgent",
}


def create_agent(name: str, **options: Any) -> Agent:
    """Instantiate the agent registered as ``name``."""
    try:
        target = AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; available: {', '.join(sorted(AGENTS))}") from None
    module_name, _, class_name = target.partition(":")
    agent: Agent = getattr(importlib.import_module(module_name), class_name)(**options)
    return agent
