"""MEME's six tasks and their mechanical judges (offline equivalents of the paper's GPT-4o judge).

- Exact Recall: the verbatim value is a substring of the answer (lower-cased, whitespace collapsed; as the
  official judge does without an LLM).
- Aggregation: every value is present (partial credit: the fraction present).
- Tracking: every value is present, in chronological order (partial: the longest run in order / values).
- Deletion: the deleted value is not revealed.
- Cascade: the new value is the sole, definitive answer: stated in a sentence that is not conditional or
  future ("if", "will be", ...), no stale value, no hedging.
- Absence: uncertainty is expressed and the stale value is not stated (stricter than the LLM judge, which
  accepts "previously X, but it changed": a substring test cannot tell that from stating X).
- Before-probes: the value held before the change is present.

Values are matched on word boundaries of the project-wide normalised text, citations removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_lens.datasets.key_facts import UNCERTAIN_PHRASES
from pytest_lens.datasets.models import Question
from pytest_lens.suites.answers import strip_citations
from pytest_lens.text import normalize

__all__ = [
    "TASKS",
    "TASK_CODES",
    "ProbeVerdict",
    "expresses_uncertainty",
    "judge_probe",
    "judge_tracking",
    "mentions",
]

#: Task names (question types of the ``meme`` suite) and the paper's abbreviations, in report order.
TASK_CODES: dict[str, str] = {
    "exact_recall": "ER",
    "aggregation": "Agg",
    "tracking": "Tr",
    "deletion": "Del",
    "cascade": "Cas",
    "absence": "Abs",
}
TASKS = tuple(TASK_CODES)

_CONDITIONAL = re.compile(r"\b(if|will|would|once|when|unless|might|may|could|should)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class ProbeVerdict:
    """A judged probe: pass/fail, partial credit where the task has it, and why."""

    passed: bool
    reason: str
    partial: float | None = None


def mentions(answer: str, value: str) -> bool:
    """``value`` occurs in ``answer`` as whole words (normalised, citations removed)."""
    needle = normalize(value)
    return bool(needle) and f" {needle} " in f" {normalize(strip_citations(answer))} "


def expresses_uncertainty(answer: str) -> bool:
    """The answer says it does not know, is unsure, or that the fact may have changed."""
    text = f" {normalize(strip_citations(answer))} "
    return any(f" {normalize(phrase)} " in text for phrase in UNCERTAIN_PHRASES)


def judge_probe(question: Question, answer: str) -> ProbeVerdict:
    """Judge one MEME probe mechanically."""
    task = question.question_type
    values = [fact.fact for fact in question.ground_truth.key_facts]
    stale = [value for value in question.stale_values if mentions(answer, value)]
    if question.phase == "before":
        found = [value for value in values if mentions(answer, value)]
        return ProbeVerdict(bool(found), "before value stated" if found else "before value missing")
    if task == "exact_recall":
        verbatim = " ".join(values[0].lower().split()) if values else ""
        ok = bool(verbatim) and verbatim in " ".join(strip_citations(answer).lower().split())
        return ProbeVerdict(ok, "verbatim payload present" if ok else "verbatim payload missing")
    if task == "aggregation":
        found = [value for value in values if mentions(answer, value)]
        partial = len(found) / len(values) if values else 0.0
        return ProbeVerdict(bool(values) and len(found) == len(values), f"{len(found)}/{len(values)} values present", partial)
    if task == "tracking":
        return judge_tracking(values, answer)
    if task == "deletion":
        return ProbeVerdict(not stale, "deleted value revealed" if stale else "deleted value not revealed")
    if task == "cascade":
        return _judge_cascade(values, stale, answer)
    if task == "absence":
        uncertain = expresses_uncertainty(answer)
        if stale:
            return ProbeVerdict(False, "stale value stated")
        return ProbeVerdict(uncertain, "uncertainty expressed" if uncertain else "no uncertainty expressed")
    return ProbeVerdict(False, f"unknown MEME task {task!r}")


def judge_tracking(values: Sequence[str], answer: str) -> ProbeVerdict:
    """Tracking, position-based: every value present in chronological order; partial = longest in-order run / values."""
    text = f" {normalize(strip_citations(answer))} "
    positions = [text.find(f" {normalize(value)} ") for value in values]
    found = [position for position in positions if position >= 0]
    # Longest run of values whose first mentions follow the chronological order.
    longest = [1] * len(positions)
    for i, pos in enumerate(positions):
        if pos < 0:
            longest[i] = 0
            continue
        for j in range(i):
            if 0 <= positions[j] < pos:
                longest[i] = max(longest[i], longest[j] + 1)
    in_order = max(longest, default=0)
    partial = in_order / len(values) if values else 0.0
    ok = bool(values) and in_order == len(values)
    reason = "full history in order" if ok else f"{len(found)}/{len(values)} values present, {in_order} in order"
    return ProbeVerdict(ok, reason, partial)


def _judge_cascade(values: Sequence[str], stale: Sequence[str], answer: str) -> ProbeVerdict:
    if not values:
        return ProbeVerdict(False, "no expected value")
    new = values[0]
    sentences = [s for s in _SENTENCE.split(strip_citations(answer)) if mentions(s, new)]
    if not sentences:
        return ProbeVerdict(False, "new value missing")
    if stale:
        return ProbeVerdict(False, "stale value also stated")
    if expresses_uncertainty(answer):
        return ProbeVerdict(False, "hedged")
    if all(_CONDITIONAL.search(normalize(s)) for s in sentences):
        return ProbeVerdict(False, "new value only stated as a conditional or future rule")
    return ProbeVerdict(True, "new value stated as the sole answer")
