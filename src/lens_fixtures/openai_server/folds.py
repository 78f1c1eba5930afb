"""The memory policies' model: deterministic folds for ``policy-core``, ``policy-summary`` and ``policy-faceted``.

Notes are kept as lines: a fold keeps the previous notes' lines and adds the new
records' lines that belong to the request (for most requests, lines carrying a number,
dated with their record's day), then keeps the newest lines within the request's
``max_tokens``. So the block a policy shows the agent holds real values from the
stream, and grows and rolls over as a model's would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lens_fixtures.openai_server.requests import ChatRequest, Reply

__all__ = ["FoldPolicy", "policy_kind"]

_CAUSAL = re.compile(r"\b(because|due to|caused|cause|after|led to|result|triggered|since|so that|therefore)\b", re.IGNORECASE)
_RELATION = re.compile(r"\b(with|between|depends?|from|to|via|shared|linked|owned|reports? to)\b", re.IGNORECASE)
_NAMED = re.compile(r"\b[A-Z][A-Za-z0-9_-]*[A-Z0-9][A-Za-z0-9_-]*\b|\b[A-Z][a-z]+ [A-Z][a-z]+\b")


def policy_kind(system: str) -> str | None:
    """Which memory-policy request a system prompt starts (``core``, ``section``, ``squeeze``, ``facet``, ``merge``), if any."""
    from lens_fixtures.adapters.policies.prompts import POLICY_SYSTEM_PROMPTS

    return next((kind for kind, prompt in POLICY_SYSTEM_PROMPTS.items() if prompt == system), None)


def _has_number(line: str) -> bool:
    return any(ch.isdigit() for ch in line)


#: Which record lines each facet keeps.
_FACET_LINES: dict[str, Callable[[str], bool]] = {
    "entities": lambda line: bool(_NAMED.search(line)),
    "relations": lambda line: bool(_RELATION.search(line)),
    "events": _has_number,
    "causes": lambda line: bool(_CAUSAL.search(line)),
}


def _record_lines(records: str, keep: Callable[[str], bool]) -> list[str]:
    lines, day = [], ""
    for raw in records.splitlines():
        if raw.startswith("### Record ("):
            day = raw.removeprefix("### Record (").rstrip(")")[:10]
            continue
        line = raw.strip().lstrip("-*• ").strip()
        if line and not line.startswith(("#", "[...")) and keep(line):
            lines.append(f"- {day}: {line}" if day else f"- {line}")
    return lines


def _note_lines(text: str) -> list[str]:
    """The bullet lines of notes (headings, empty markers and blank lines dropped)."""
    return [line for line in text.splitlines() if line.strip() and line.strip() not in _EMPTY and not line.startswith("#")]


_EMPTY = ("(empty)", "(none)", "(nothing to note yet)")


def _newest(lines: list[str], max_tokens: int) -> str:
    """The newest distinct lines that fit ``max_tokens`` (bytes // 4), oldest first."""
    kept: list[str] = []
    used = 0
    for line in reversed(list(dict.fromkeys(lines))):
        size = len(line.encode("utf-8")) + 1
        if (used + size) // 4 > max_tokens:
            break
        kept.append(line)
        used += size
    return "\n".join(reversed(kept))


@dataclass
class FoldPolicy:
    """Answers the policies' fold, section, squeeze and merge requests with line-based notes."""

    def __call__(self, request: ChatRequest) -> Reply:
        """The updated notes for the request in the last user message."""
        kind = policy_kind(request.system)
        text = str(request.messages[-1].get("content", "")) if request.messages else ""
        max_tokens = request.body.get("max_tokens")
        limit = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else 2048
        notes, _, records = text.partition("\n\nNew records:\n")
        records = records.split("\n\nWrite the section", 1)[0]
        if kind == "facet":
            facet = text.removeprefix("Facet: ").split(":", 1)[0]
            previous = notes.split("\n", 3)[-1] if notes.count("\n") >= 3 else ""
            lines = _note_lines(previous) + _record_lines(records, _FACET_LINES.get(facet, _has_number))
        elif kind == "core":
            lines = _note_lines(notes.split("\n", 1)[1] if "\n" in notes else "") + _record_lines(records, _has_number)
        elif kind == "section":
            lines = _record_lines(records, _has_number)
        elif kind in ("squeeze", "merge"):
            body = text.rsplit("\n\nWrite ", 1)[0].removeprefix("Sections to merge:\n")
            lines = [line for line in _note_lines(body) if not line.endswith(":")]
        else:
            lines = []
        return Reply(content=_newest(lines, limit) or "(nothing to note yet)")
