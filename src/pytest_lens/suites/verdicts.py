"""Asking a judge model for a JSON verdict, with one repair request when the reply is unusable.

The sibling suites' LLM judges (MEME, LongMemEval) send one prompt per answer through the run's
:class:`~pytest_lens.llm.client.ChatClient` (so requests are cached and replayed like every other)
at temperature 0 in JSON mode, and read ``{"correct": true|false, "reason": "..."}`` (or a
suite's richer object). A reply that is not a usable verdict gets a different request saying
what was wrong (a resend would only get the cached reply again); when that fails too, or the
endpoint fails, :class:`~pytest_lens.scoring.judge.JudgeError` says why and the question is left
unjudged: never a pass or a fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pytest_lens.scoring.judge import JudgeError

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["VERDICT_FORMAT", "Asked", "UnusableReply", "ask_for_verdict", "json_object", "read_reason", "read_verdict"]

#: The reply format of a plain verdict, as shown to the judge.
VERDICT_FORMAT = '{"correct": true or false, "reason": "one sentence"}'
_JSON_MODE = {"type": "json_object"}
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)

T = TypeVar("T")


class UnusableReply(ValueError):
    """A judge reply that is not a usable verdict; the message says what is wrong."""


@dataclass(frozen=True)
class Asked(Generic[T]):
    """What a judge request gave: the read verdict, the raw reply (abridged) and the attempts it took."""

    verdict: T
    raw: str
    attempts: int


def json_object(text: str) -> Mapping[str, Any]:
    """The JSON object in a reply (reasoning ``<think>`` blocks, code fences and surrounding prose ignored)."""
    cleaned = _THINK.sub(" ", text).strip()
    fenced = _FENCE.match(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    candidates = [cleaned]
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if 0 <= start < end and (start, end) != (0, len(cleaned) - 1):
        candidates.append(cleaned[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    raise UnusableReply("the reply is not a JSON object")


def read_reason(data: Mapping[str, Any]) -> str:
    """A verdict object's ``reason``: a non-empty string, whitespace collapsed."""
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise UnusableReply('"reason" is missing or not a non-empty string')
    return " ".join(reason.split())


def read_verdict(data: Mapping[str, Any]) -> tuple[bool, str]:
    """``correct`` (a JSON boolean) and ``reason`` (:func:`read_reason`) of a verdict object."""
    reason = read_reason(data)
    correct = data.get("correct")
    if not isinstance(correct, bool):
        raise UnusableReply('"correct" is missing or not true/false')
    return correct, reason


def ask_for_verdict(
    client: ChatClient,
    prompt: str,
    read: Callable[[str], T],
    *,
    reply_format: str = VERDICT_FORMAT,
    repairs: int = 1,
    max_tokens: int | None = None,
    subject: str = "verdict",
) -> Asked[T]:
    """Send ``prompt``; ``read`` turns a reply into a verdict or raises :class:`UnusableReply`.

    Up to ``repairs`` repair requests follow an unusable reply; :class:`JudgeError` when no
    usable verdict could be had or the endpoint failed (``subject`` names it in the message).
    """
    from pytest_lens.llm.errors import LLMError

    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    problem, raw = "", ""
    for attempt in range(1, repairs + 2):
        try:
            reply = client.complete(messages, max_tokens=max_tokens, response_format=_JSON_MODE, purpose="judge")
        except LLMError as exc:
            raise JudgeError(str(exc)) from None
        raw = reply.content
        try:
            verdict = read(raw)
        except UnusableReply as exc:
            problem = str(exc)
            repair = f"That reply could not be used: {problem}. Reply again with ONLY a JSON object of this form: {reply_format}"
            messages = [*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": repair}]
            continue
        return Asked(verdict, " ".join(raw.split())[:300], attempt)
    shown = " ".join(raw.split())[:80]
    raise JudgeError(f"no usable {subject} after {repairs + 1} attempts ({problem}); last reply {shown!r}")
