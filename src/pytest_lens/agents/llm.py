"""The LLM agent (SPEC §4): a tool-calling loop through any OpenAI-compatible endpoint.

Every limit is the :class:`~pytest_lens.execution.bridge.ToolBridge`'s: each model call is a
turn (``bridge.begin_turn``), each requested tool call goes through ``bridge.call``
with the model's raw argument text (bad JSON, unknown tools, bad arguments and
unknown ref ids come back as error results the model can read, and are counted),
and the tokens the endpoint reports are charged with ``bridge.charge_agent_tokens``.
Every other turn sends ``tool_choice="auto"`` explicitly: servers differ on what a missing
``tool_choice`` means (llama.cpp's ``chatml-function-calling`` format then leaves the tools
out of the prompt, and the model never sees them). On the last allowed turn the model is
told not to call tools (``tool_choice="none"``) so it answers from what it has; if it calls tools anyway the loop goes on and the
turn limit is recorded as a violation, exactly as for any agent. An adapter's block of
context (``context()``) follows the paper's prompt in the system message, delimited
(:func:`~pytest_lens.agents.base.system_prompt`).
"""

from __future__ import annotations

from typing import Any

from pytest_lens.agents.base import AgentAnswer, AgentQuestion, system_prompt
from pytest_lens.execution.bridge import ToolBridge
from pytest_lens.llm.client import ChatClient
from pytest_lens.llm.replies import strip_reasoning

__all__ = ["LLMAgent", "strip_reasoning"]


class LLMAgent:
    """``--lens-agent=llm``: the paper's system prompt, the memory's tools, temperature 0, a fixed seed."""

    name = "llm"
    #: Questions answered at once unless ``--lens-concurrency`` says otherwise: the model's latency, not
    #: this process, is what an LLM agent waits on, so overlapping questions is nearly free.
    default_concurrency = 8

    def __init__(self, lens_llm: ChatClient | None = None, max_tokens: int | None = None) -> None:
        if lens_llm is None:
            raise ValueError("the llm agent needs a model: pass --lens-agent-model (and --lens-llm-base-url for a non-OpenAI endpoint)")
        self.client = lens_llm
        self.max_tokens = max_tokens
        self.description = f"llm ({lens_llm.description}, temperature {lens_llm.temperature:g}, seed {lens_llm.seed})"

    def answer(self, question: AgentQuestion, bridge: ToolBridge) -> AgentAnswer:
        """Let the model search and retrieve until it answers or the budget ends the loop."""
        tools = [spec.openai() for spec in bridge.tools]
        system = system_prompt(bridge.context)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": question.prompt}]
        answer = ""
        max_turns = bridge.tracker.budget.max_turns
        while bridge.begin_turn():
            last_turn = bridge.tracker.turns >= max_turns
            reply = self.client.complete(
                messages,
                tools=tools,
                # "auto" said out loud: llama.cpp's server leaves the tools out of the prompt when no tool_choice is sent.
                tool_choice="none" if last_turn else "auto",
                max_tokens=self.max_tokens,
                purpose="agent",
            )
            if reply.usage is not None:
                bridge.charge_agent_tokens(reply.usage.total_tokens)
            messages.append(reply.assistant_message())
            if reply.content.strip():
                answer = reply.content
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                outcome = bridge.call(call.name, call.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
        return AgentAnswer(strip_reasoning(answer))
