"""Reading judge replies strictly: a reply counts only when it *is* the verdict.

Every LLM judge of the project reads its replies here: LENS's pairwise judge (``A``, ``B`` or
``TIE``), MEME's and LongMemEval's JSON verdicts, and any judge with a fixed set of answers
(e.g. ``YES`` / ``NO``). The rules are the same for all of them:

- reasoning blocks (``<think>...</think>``) are dropped first, and so is one Markdown code fence
  wrapping the whole reply;
- a token verdict (:class:`TokenVerdict`) is the whole remaining reply: one of the allowed tokens,
  case, surrounding quotes or Markdown emphasis and trailing punctuation aside; or a JSON object
  whose ``verdict`` field is such a token. ``"I refuse to give a verdict"`` is not ``A``, and
  ``"Response A"`` is not ``A`` either: the reply must be the verdict, not contain one;
- a JSON verdict (:func:`json_object`) is a reply that is one JSON object, with nothing around it.

Anything else is an :class:`UnusableReply`. :func:`ask_judge` then sends one repair request saying
what was wrong (a different request: a resend would get the cached reply again), and when that
fails too, or the endpoint fails, raises :class:`JudgeError`: a judge failure, never a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pytest_lens.llm.replies import strip_reasoning

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "Asked",
    "JudgeError",
    "TokenVerdict",
    "UnusableReply",
    "ask_judge",
    "json_object",
    "reply_body",
]

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n?(.*?)\n?```$", re.DOTALL)
#: Wrappers a one-word reply may carry (quotes, Markdown emphasis or code) and punctuation that may end it.
_WRAPPERS = "*_`\"' \t\n"
_TRAILING = ".!"


class JudgeError(Exception):
    """A judgment could not be made (endpoint failure, replay miss, unusable verdict)."""


class UnusableReply(ValueError):
    """A judge reply that is not a usable verdict; the message says what is wrong."""


def reply_body(text: str) -> str:
    """The reply without reasoning blocks, surrounding whitespace and one code fence around all of it."""
    body = strip_reasoning(text)
    fenced = _FENCE.match(body)
    return fenced.group(1).strip() if fenced else body


def json_object(text: str) -> Mapping[str, Any]:
    """The reply as a JSON object; :class:`UnusableReply` unless the whole reply is one (see the module docstring)."""
    body = reply_body(text)
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        if "{" in body:
            raise UnusableReply("the reply is not only a JSON object (there is text around it, or it is cut off)") from None
        raise UnusableReply("the reply is not a JSON object") from None
    if not isinstance(data, dict):
        raise UnusableReply(f"the reply is a JSON {type(data).__name__}, not an object")
    return data


@dataclass(frozen=True)
class TokenVerdict:
    """A strict reader for replies that must be one of a fixed set of tokens (``A``/``B``/``TIE``, ``YES``/``NO``).

    ``read`` returns the token as written in :attr:`tokens`; ``instruction`` is the sentence that asks for it.
    """

    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.tokens or any(not token.strip() or token != token.strip() for token in self.tokens):
            raise ValueError(f"a token verdict needs non-empty tokens without surrounding spaces, got {self.tokens!r}")

    @property
    def instruction(self) -> str:
        """``Respond with ONLY one word: A, B, or TIE``."""
        *first, last = self.tokens
        choices = f"{', '.join(first)}, or {last}" if len(first) > 1 else f"{first[0]} or {last}" if first else last
        return f"Respond with ONLY one word: {choices}"

    def read(self, text: str) -> str:
        """The token the reply is; :class:`UnusableReply` when the reply is anything else."""
        body = reply_body(text)
        if body.startswith(("{", '"')):
            return self._match(self._from_json(body))
        return self._match(body)

    def _from_json(self, body: str) -> str:
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            raise UnusableReply(f"the reply is not {self._choices()} (nor a JSON verdict)") from None
        if isinstance(data, str):
            return data
        value = None
        if isinstance(data, dict):
            value = next((item for key, item in data.items() if isinstance(key, str) and key.lower() == "verdict"), None)
        if not isinstance(value, str):
            raise UnusableReply(f'the JSON reply has no "verdict" field holding {self._choices()}')
        return value

    def _match(self, candidate: str) -> str:
        word = candidate.strip(_WRAPPERS).rstrip(_TRAILING).strip(_WRAPPERS).upper()
        for token in self.tokens:
            if word == token.upper():
                return token
        shown = " ".join(candidate.split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise UnusableReply(f"the reply {shown!r} is not {self._choices()}" if shown else f"the reply is empty, not {self._choices()}")

    def _choices(self) -> str:
        return "one of " + ", ".join(self.tokens)


@dataclass(frozen=True)
class Asked(Generic[T]):
    """What a judge request gave: the read verdict, the raw reply (abridged) and the attempts it took."""

    verdict: T
    raw: str
    attempts: int


def ask_judge(
    client: ChatClient,
    prompt: str,
    read: Callable[[str], T],
    repair: Callable[[str], str],
    *,
    repairs: int = 1,
    max_tokens: int | None = None,
    response_format: Mapping[str, Any] | None = None,
    subject: str = "verdict",
) -> Asked[T]:
    """Send ``prompt``; ``read`` turns a reply into a verdict or raises :class:`UnusableReply`.

    After an unusable reply, up to ``repairs`` repair requests follow: the conversation so far plus
    ``repair(problem)`` as a new user message. :class:`JudgeError` when no usable verdict could be
    had or the endpoint failed (``subject`` names what was asked for in the message).
    """
    from pytest_lens.llm.errors import LLMError

    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    problem, raw = "", ""
    for attempt in range(1, repairs + 2):
        try:
            reply = client.complete(messages, max_tokens=max_tokens, response_format=response_format, purpose="judge")
        except LLMError as exc:
            raise JudgeError(str(exc)) from None
        raw = reply.content
        try:
            verdict = read(raw)
        except UnusableReply as exc:
            problem = str(exc)
            if reply.finish_reason == "length":
                problem += " (the reply was cut off at the token limit)"
            messages = [*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": repair(problem)}]
            continue
        return Asked(verdict, " ".join(raw.split())[:300], attempt)
    shown = " ".join(raw.split())[:80]
    raise JudgeError(f"no usable {subject} after {repairs + 1} attempts ({problem}); last reply {shown!r}")
