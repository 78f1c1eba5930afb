"""The agent interface: answer one question using only the bridge's tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_lens.execution.bridge import ToolBridge
    from pytest_lens.records.results import MemoryContext

__all__ = ["CONTEXT_CLOSE", "SYSTEM_PROMPT", "Agent", "AgentAnswer", "AgentQuestion", "system_prompt"]

#: The answering agent's system prompt, verbatim from the LENS paper (Listing 3).
SYSTEM_PROMPT = """You are a research assistant with access to a memory system. Your task is to answer the user's question by searching and retrieving information from memory.

Instructions:
- Use `memory_search` to find relevant information for the question.
- Use `memory_retrieve` to get full document details when you need specifics.
- Use `memory_capabilities` to understand what the memory system offers, including available search modes, filter fields, and any extra tools.
- If extra tools are available (e.g. `batch_retrieve`), prefer them for efficiency.
- Synthesize your findings into a clear, concise answer.
- IMPORTANT: For each claim in your answer, cite the supporting episode using the format `[ref_id]`. Every factual statement must have at least one citation.
- If you cannot find sufficient information, say so clearly.
- You have a limited number of turns and tool calls. Use them efficiently."""


#: Closes the adapter's block of context in the system prompt (see :func:`system_prompt`).
CONTEXT_CLOSE = "</memory_context>"


def system_prompt(context: MemoryContext | None = None) -> str:
    """The system prompt: the paper's, then the adapter's block of context (if any) in a delimited block.

    The block says which ref cites it. A closing tag inside the adapter's text is
    defused, so the block ends where pytest-lens ends it.
    """
    if context is None:
        return SYSTEM_PROMPT
    text = context.text.strip().replace(CONTEXT_CLOSE, "</ memory_context>")
    return (
        f"{SYSTEM_PROMPT}\n\n"
        f"The memory system keeps this {context.title} for you, consolidated from what it has stored so far. Read it before "
        f"searching; it may be incomplete, so check specifics with the tools. Cite it as [{context.ref_id}] for claims you "
        f"take from it.\n"
        f'<memory_context ref_id="{context.ref_id}">\n{text}\n{CONTEXT_CLOSE}'
    )


@dataclass(frozen=True)
class AgentQuestion:
    """What an agent is told: the question and nothing of its ground truth."""

    question_id: str
    prompt: str
    #: Which answer of the question this is (``--lens-repeat``); a stochastic agent of your own can seed on it.
    #: LLM requests made while answering already get a seed and a cache key of their own for it.
    repetition: int = 0


@dataclass(frozen=True)
class AgentAnswer:
    """The agent's final answer text; tool use and budget are recorded by the bridge."""

    text: str


@runtime_checkable
class Agent(Protocol):
    """Answers questions through a :class:`~pytest_lens.execution.bridge.ToolBridge`.

    ``name`` identifies the agent in reports and artifacts; ``description`` says
    what produced the scores (e.g. that no LLM was involved). An agent may set
    ``default_concurrency`` (an int): how many questions to answer at once when
    ``--lens-concurrency`` is not given (1 when absent). ``answer`` must then be safe
    to call from several threads at once, each with its own bridge.
    """

    name: str
    description: str

    def answer(self, question: AgentQuestion, bridge: ToolBridge) -> AgentAnswer:
        """Answer ``question``; every memory access goes through ``bridge.call``."""
        ...
