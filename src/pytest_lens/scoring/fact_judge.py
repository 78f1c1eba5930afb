"""LENS V2's judge questions, answered strictly: is each key fact in the answer, and how well do the cited texts support it.

- :func:`judge_fact`: for one key fact, the judge says whether the answer states or
  implies it. The verdict must be exactly ``YES`` or ``NO`` (case, surrounding
  whitespace and a final full stop aside); anything else, prose included, gets one
  repair prompt, and a second unusable reply raises :class:`JudgeError`. A failed
  or ambiguous verdict is never read as "absent" (the reference V2 harness's defect).
  The offline judge decides by matching the fact and its aliases, as ``fact_recall`` does.
- :func:`rate_support`: the judge rates, on a fixed 0-4 scale, how well the texts of
  the episodes the answer cites support its claims; strict single digit, one repair.
  The offline judge has no way to read support and gives none (the metric stays absent).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pytest_lens.scoring.judge import Criterion, Judge, JudgeError, LLMJudge, OfflineJudge
from pytest_lens.text import normalize

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "FACT_CHECK_PROMPT",
    "SUPPORT_PROMPT",
    "SUPPORT_SCALE",
    "FactVerdict",
    "SupportRating",
    "judge_fact",
    "parse_support",
    "parse_yes_no",
    "rate_support",
]

FACT_CHECK_PROMPT = """You are checking whether an analyst's answer contains one specific finding from a longitudinal dataset.

Question asked: {question}

Finding to check: {finding}

Answer:
{answer}

Does the answer state or clearly imply this finding? Different wording is fine; the core of the finding must be there.

Respond with ONLY one word: YES or NO"""

FACT_REPAIR = "Respond with ONLY one word: YES or NO"

#: The fixed scale of ``evidence_support`` (the score is the rating divided by its top).
SUPPORT_SCALE = {
    0: "the cited texts support none of the answer's claims (or contradict them)",
    1: "they support a few minor claims only",
    2: "they support about half of the claims",
    3: "they support most claims, including the main one",
    4: "they support every claim the answer makes",
}

SUPPORT_PROMPT = """You are checking whether the sources an analyst cited support the analyst's answer.

Question asked: {question}

Answer:
{answer}

Cited sources:
{sources}

How well do the cited sources support the answer's claims? Use this scale:
{scale}

Respond with ONLY one digit from 0 to 4"""

SUPPORT_REPAIR = "Respond with ONLY one digit from 0 to 4"

#: A cited source is shown up to this many characters; all of them together up to :data:`SOURCES_CHARS`.
SOURCE_CHARS = 6000
SOURCES_CHARS = 24000

T = TypeVar("T")

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def _bare(text: str) -> str:
    return _THINK.sub(" ", text).strip().rstrip(".").strip().strip("*").strip().upper()


def parse_yes_no(text: str) -> bool | None:
    """``True`` for ``YES``, ``False`` for ``NO``; ``None`` for anything else (prose, both, neither)."""
    bare = _bare(text)
    return True if bare == "YES" else False if bare == "NO" else None


def parse_support(text: str) -> int | None:
    """The rating, one digit 0-4 alone; ``None`` for anything else."""
    bare = _bare(text)
    return int(bare) if len(bare) == 1 and bare in "01234" else None


@dataclass(frozen=True)
class FactVerdict:
    """Whether the answer holds the fact, what the judge replied, and in how many attempts."""

    present: bool
    raw: str
    attempts: int = 1


@dataclass(frozen=True)
class SupportRating:
    """The 0-4 rating, what the judge replied, and in how many attempts."""

    rating: int
    raw: str
    attempts: int = 1

    @property
    def score(self) -> float:
        """The rating on 0-1."""
        return self.rating / max(SUPPORT_SCALE)


def _ask(
    client: ChatClient, prompt: str, repair: str, parse: Callable[[str], T | None], repairs: int, max_tokens: int | None
) -> tuple[T, str, int]:
    from pytest_lens.llm.errors import LLMError

    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    raw = ""
    for attempt in range(1, repairs + 2):
        try:
            reply = client.complete(messages, max_tokens=max_tokens, purpose="judge")
        except LLMError as exc:
            raise JudgeError(str(exc)) from None
        raw = reply.content
        value = parse(raw)
        if value is not None:
            return value, raw.strip()[:200], attempt
        # A different request (a resend would be answered from the cache the same way).
        messages = [*messages, {"role": "assistant", "content": raw}, {"role": "user", "content": repair}]
    shown = " ".join(raw.split())[:80]
    raise JudgeError(f"no usable verdict ({repair.removeprefix('Respond with ONLY ')}) after {repairs + 1} attempts; last reply {shown!r}")


def judge_fact(judge: Judge, question: str, fact: Criterion, answer: str) -> FactVerdict:
    """Whether ``answer`` states or implies ``fact``; :class:`JudgeError` when the judge gives no usable verdict."""
    if isinstance(judge, OfflineJudge):
        patterns = [normalize(p) for p in (fact.text, *fact.aliases) if normalize(p)]
        present = any(p in normalize(answer) for p in patterns)
        return FactVerdict(present, raw=f"fact {'in' if present else 'not in'} the answer (offline: text or alias)")
    if not isinstance(judge, LLMJudge):
        raise JudgeError(f"the {judge.name} judge cannot check facts one by one")
    prompt = FACT_CHECK_PROMPT.format(question=question, finding=fact.describe(), answer=answer.strip() or "(empty answer)")
    value, raw, attempts = _ask(judge.client, prompt, FACT_REPAIR, parse_yes_no, judge.repairs, judge.max_tokens)
    return FactVerdict(value, raw, attempts)


def rate_support(judge: Judge, question: str, answer: str, sources: Mapping[str, str]) -> SupportRating | None:
    """How well ``sources`` (cited ref -> text) support ``answer``; ``None`` from a judge that cannot read support.

    Nothing cited (or no cited text to show) is rated 0 without asking: nothing supports the claims.
    """
    if not isinstance(judge, LLMJudge):
        return None
    if not sources:
        return SupportRating(0, raw="no cited source text", attempts=0)
    shown, used = [], 0
    for ref, text in sources.items():
        room = min(SOURCE_CHARS, SOURCES_CHARS - used)
        if room <= 0:
            shown.append(f"[{ref}] (not shown: the sources shown already reach {SOURCES_CHARS:,} characters)")
            continue
        cut = text[:room]
        used += len(cut)
        more = f"\n[... {len(text) - len(cut):,} more characters not shown]" if len(cut) < len(text) else ""
        shown.append(f"[{ref}]\n{cut}{more}")
    scale = "\n".join(f"{value} - {meaning}" for value, meaning in SUPPORT_SCALE.items())
    prompt = SUPPORT_PROMPT.format(question=question, answer=answer.strip() or "(empty answer)", sources="\n\n".join(shown), scale=scale)
    value, raw, attempts = _ask(judge.client, prompt, SUPPORT_REPAIR, parse_support, judge.repairs, judge.max_tokens)
    return SupportRating(value, raw, attempts)
