"""Agent budgets (SPEC §4): presets, parsing, and the per-question tracker."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_lens.records.results import Violation, ViolationKind

__all__ = [
    "EXHAUSTED_MESSAGE",
    "PRESETS",
    "TOO_MANY_CALLS_MESSAGE",
    "Budget",
    "BudgetTracker",
    "parse_budget",
    "result_tokens",
]

EXHAUSTED_MESSAGE = "[Context budget exhausted -- synthesize answer from evidence already retrieved]"
TOO_MANY_CALLS_MESSAGE = "[Budget exceeded: too many tool calls -- synthesize answer from evidence already retrieved]"


@dataclass(frozen=True)
class Budget:
    """Limits for answering one question."""

    name: str
    result_token_cap: int
    max_turns: int
    max_tool_calls: int
    max_agent_tokens: int

    def describe(self) -> str:
        """One line for reports."""
        return (
            f"{self.name} (results {self.result_token_cap:,} tokens, {self.max_turns} turns, "
            f"{self.max_tool_calls} tool calls, agent {self.max_agent_tokens:,} tokens)"
        )


PRESETS: dict[str, Budget] = {
    "4k": Budget("4k", 4096, 6, 12, 16384),
    "8k": Budget("8k", 8192, 8, 16, 16384),
    "16k": Budget("16k", 16384, 10, 20, 32768),
    "32k": Budget("32k", 32768, 12, 24, 65536),
}

_CUSTOM_KEYS = {"results": "result_token_cap", "turns": "max_turns", "calls": "max_tool_calls", "agent_tokens": "max_agent_tokens"}
_SIZE = re.compile(r"^(\d+)(k?)$", re.IGNORECASE)


def parse_budget(spec: str) -> Budget:
    """A preset name (``4k``, ``8k``, ``16k``, ``32k``) or a custom budget.

    Custom: ``results=12000,turns=8,calls=16,agent_tokens=20000``; omitted limits
    come from the 16k preset. Raises :class:`ValueError` with a usable message.
    """
    text = spec.strip().lower()
    if text in PRESETS:
        return PRESETS[text]
    if "=" not in text:
        raise ValueError(f"unknown budget {spec!r}: use one of {', '.join(PRESETS)} or results=N[,turns=N,calls=N,agent_tokens=N]")
    values = {
        "result_token_cap": PRESETS["16k"].result_token_cap,
        "max_turns": PRESETS["16k"].max_turns,
        "max_tool_calls": PRESETS["16k"].max_tool_calls,
        "max_agent_tokens": PRESETS["16k"].max_agent_tokens,
    }
    for part in text.split(","):
        key, _, raw = part.partition("=")
        key = key.strip()
        if key not in _CUSTOM_KEYS:
            raise ValueError(f"budget {spec!r}: unknown limit {key!r}; use {', '.join(_CUSTOM_KEYS)}")
        match = _SIZE.match(raw.strip())
        if not match or int(match.group(1)) <= 0:
            raise ValueError(f"budget {spec!r}: {key} must be a positive integer (e.g. 12000 or 12k), got {raw!r}")
        values[_CUSTOM_KEYS[key]] = int(match.group(1)) * (1024 if match.group(2) else 1)
    name = "custom-" + "-".join(f"{k}{values[v]}" for k, v in _CUSTOM_KEYS.items())
    return Budget(name=name, **values)


def result_tokens(text: str) -> int:
    """Tokens charged for one tool result: UTF-8 bytes // 4 (SPEC §4)."""
    return len(text.encode("utf-8")) // 4


@dataclass
class BudgetTracker:
    """Counts what one question consumed and records every limit it hit.

    One tracker serves every agent, so the offline and LLM agents are held to
    exactly the same rules.
    """

    budget: Budget
    result_tokens: int = 0
    tool_calls: int = 0
    turns: int = 0
    agent_tokens: int = 0
    violations: list[Violation] = field(default_factory=list)

    def admit_tool_call(self) -> str | None:
        """Count a tool call; return the refusal message if the budget refuses it."""
        self.tool_calls += 1
        if self.tool_calls > self.budget.max_tool_calls:
            self._violate("tool_calls", f"tool call {self.tool_calls} exceeds the limit of {self.budget.max_tool_calls}")
            return TOO_MANY_CALLS_MESSAGE
        if self.result_tokens >= self.budget.result_token_cap:
            self._violate(
                "result_tokens",
                f"tool call {self.tool_calls} made after {self.result_tokens:,} result tokens (cap {self.budget.result_token_cap:,})",
            )
            return EXHAUSTED_MESSAGE
        return None

    def charge_result(self, text: str) -> int:
        """Charge a tool result delivered to the agent; returns its token count."""
        tokens = result_tokens(text)
        self.result_tokens += tokens
        return tokens

    @property
    def remaining_result_tokens(self) -> int:
        """Result tokens left before the cap (never negative)."""
        return max(0, self.budget.result_token_cap - self.result_tokens)

    @property
    def remaining_tool_calls(self) -> int:
        """Tool calls left before the limit (never negative)."""
        return max(0, self.budget.max_tool_calls - self.tool_calls)

    def begin_turn(self) -> bool:
        """Count an agent turn; ``False`` (and a violation) once the turn limit is passed."""
        self.turns += 1
        if self.turns > self.budget.max_turns:
            self._violate("turns", f"turn {self.turns} exceeds the limit of {self.budget.max_turns}")
            return False
        return True

    def charge_agent_tokens(self, tokens: int) -> None:
        """Add tokens the agent's model reported; a violation when the total passes the cap."""
        before = self.agent_tokens
        self.agent_tokens += tokens
        if before <= self.budget.max_agent_tokens < self.agent_tokens:
            self._violate("agent_tokens", f"agent used {self.agent_tokens:,} tokens (cap {self.budget.max_agent_tokens:,})")

    def _violate(self, kind: ViolationKind, detail: str) -> None:
        self.violations.append(Violation(kind=kind, detail=detail, tool_call=self.tool_calls or None))
