"""Asking a judge model for a JSON verdict, with one repair request when the reply is unusable.

The sibling suites' LLM judges (MEME, LongMemEval) send one prompt per answer through the run's
:class:`~pytest_lens.llm.client.ChatClient` (so requests are cached and replayed like every other)
at temperature 0 in JSON mode, and read ``{"correct": true|false, "reason": "..."}`` (or a
suite's richer object). Replies are read as strictly as every judge's
(:mod:`pytest_lens.judging.verdicts`): the reply must be the JSON object, nothing around it. A
reply that is not a usable verdict gets a different request saying what was wrong (a resend would
only get the cached reply again); when that fails too, or the endpoint fails,
:class:`~pytest_lens.judging.verdicts.JudgeError` says why and the question is left unjudged:
never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_lens.judging.verdicts import Asked, UnusableReply, ask_judge, json_object

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["VERDICT_FORMAT", "Asked", "UnusableReply", "ask_for_verdict", "json_object", "read_reason", "read_verdict"]

#: The reply format of a plain verdict, as shown to the judge.
VERDICT_FORMAT = '{"correct": true or false, "reason": "one sentence"}'
_JSON_MODE = {"type": "json_object"}

T = TypeVar("T")


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
    """Send ``prompt`` in JSON mode; ``read`` turns a reply into a verdict or raises :class:`UnusableReply`.

    Up to ``repairs`` repair requests follow an unusable reply; :class:`JudgeError` when no
    usable verdict could be had or the endpoint failed (``subject`` names it in the message).
    """
    return ask_judge(
        client,
        prompt,
        read,
        lambda problem: f"That reply could not be used: {problem}. Reply again with ONLY a JSON object of this form: {reply_format}",
        repairs=repairs,
        max_tokens=max_tokens,
        response_format=_JSON_MODE,
        subject=subject,
    )
