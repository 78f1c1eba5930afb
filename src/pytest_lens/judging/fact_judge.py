"""LENS V2's judge questions, answered strictly: is each key fact in the answer, and how well do the cited texts support it.

- :func:`judge_fact`: for one key fact, the judge says whether the answer states or
  implies it. The verdict must be exactly ``YES`` or ``NO``, read by the project's one
  strict reader (:class:`~pytest_lens.judging.verdicts.TokenVerdict`); anything else,
  prose included, gets one repair prompt (:func:`~pytest_lens.judging.verdicts.ask_judge`),
  and a second unusable reply raises :class:`JudgeError`. A failed
  or ambiguous verdict is never read as "absent" (the reference V2 harness's defect).
  The offline judge decides by matching the fact and its aliases, as ``fact_recall`` does.
- :func:`rate_support`: the judge rates, on a fixed 0-4 scale, how well the texts of
  the episodes the answer cites support its claims; one digit, read by the same reader, one repair.
  The offline judge has no way to read support and gives none (the metric stays absent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pytest_lens.judging.judge import Criterion, Judge, JudgeError, LLMJudge, OfflineJudge
from pytest_lens.judging.verdicts import TokenVerdict, UnusableReply, ask_judge
from pytest_lens.text import normalize

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

#: The per-fact verdict, and the 0-4 support rating, as the strict reader reads them.
YES_NO = TokenVerdict(("YES", "NO"))

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

SUPPORT_RATING = TokenVerdict(tuple(str(value) for value in range(5)))

#: A cited source is shown up to this many characters; all of them together up to :data:`SOURCES_CHARS`.
SOURCE_CHARS = 6000
SOURCES_CHARS = 24000

T = TypeVar("T")


def _lenient(read: Callable[[str], T]) -> Callable[[str], T | None]:
    def parse(text: str) -> T | None:
        try:
            return read(text)
        except UnusableReply:
            return None

    return parse


def _yes(text: str) -> bool:
    return YES_NO.read(text) == "YES"


def _rating(text: str) -> int:
    return int(SUPPORT_RATING.read(text))


def parse_yes_no(text: str) -> bool | None:
    """``True`` for ``YES``, ``False`` for ``NO``; ``None`` for anything else (prose, both, neither)."""
    return _lenient(_yes)(text)


def parse_support(text: str) -> int | None:
    """The rating, one digit 0-4 alone; ``None`` for anything else."""
    return _lenient(_rating)(text)


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


def _repair(instruction: str) -> Callable[[str], str]:
    return lambda problem: f"That reply could not be used: {problem}. {instruction}"


def judge_fact(judge: Judge, question: str, fact: Criterion, answer: str) -> FactVerdict:
    """Whether ``answer`` states or implies ``fact``; :class:`JudgeError` when the judge gives no usable verdict."""
    if isinstance(judge, OfflineJudge):
        patterns = [normalize(p) for p in (fact.text, *fact.aliases) if normalize(p)]
        present = any(p in normalize(answer) for p in patterns)
        return FactVerdict(present, raw=f"fact {'in' if present else 'not in'} the answer (offline: text or alias)")
    if not isinstance(judge, LLMJudge):
        raise JudgeError(f"the {judge.name} judge cannot check facts one by one")
    prompt = FACT_CHECK_PROMPT.format(question=question, finding=fact.describe(), answer=answer.strip() or "(empty answer)")
    asked = ask_judge(
        judge.client,
        prompt,
        _yes,
        _repair(YES_NO.instruction),
        repairs=judge.repairs,
        max_tokens=judge.max_tokens,
        subject="verdict (YES or NO)",
    )
    return FactVerdict(asked.verdict, asked.raw[:200], asked.attempts)


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
    asked = ask_judge(
        judge.client,
        prompt,
        _rating,
        _repair("Respond with ONLY one digit from 0 to 4"),
        repairs=judge.repairs,
        max_tokens=judge.max_tokens,
        subject="rating (one digit from 0 to 4)",
    )
    return SupportRating(asked.verdict, asked.raw[:200], asked.attempts)
