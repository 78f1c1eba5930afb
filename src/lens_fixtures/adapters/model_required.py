"""The run's model, which the adapters whose memory an LLM builds cannot do without."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_lens import AdapterUnavailable

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["require_llm"]


def require_llm(lens_llm: ChatClient | None, need: str) -> ChatClient:
    """``lens_llm``; without one, :class:`AdapterUnavailable` saying ``need`` and how to configure an endpoint."""
    if lens_llm is None:
        raise AdapterUnavailable(
            f"{need}: pass --lens-llm-base-url and --lens-agent-model "
            "(or --lens-judge-model); its requests go through the LLM cache like the agent's"
        )
    return lens_llm
