"""Short-answer matching as the sibling benchmarks define it (MemoryAgentBench, LoCoMo).

MemoryAgentBench normalises answers the DrQA/DensePhrases way (lower case, no punctuation,
no articles, collapsed whitespace) and takes the best score over the acceptable golds and over
the raw output and the text after ``Answer:``. Citations (``[ref]``) that our agents add are
removed first: they are not part of the answer and their digits would fake substring matches.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "answer_variants",
    "exact_match",
    "gold_recall",
    "normalize_answer",
    "strip_citations",
    "substring_exact_match",
    "token_f1",
]

_CITATION = re.compile(r"\[[^\[\]\n]{1,400}\](?!\()")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ANSWER_PREFIX = re.compile(r"answer\s*:", re.IGNORECASE)


def strip_citations(text: str) -> str:
    """``text`` without ``[ref_id]`` citation groups."""
    return _CITATION.sub(" ", text)


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and the articles a/an/the, collapse whitespace (MemoryAgentBench)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_variants(output: str) -> list[str]:
    """The output (citations removed) and, when present, the text after its last ``Answer:``."""
    text = strip_citations(output)
    variants = [text]
    matches = list(_ANSWER_PREFIX.finditer(text))
    if matches:
        variants.append(text[matches[-1].end() :])
    return variants


def exact_match(output: str, golds: Sequence[str]) -> float:
    """1.0 when a normalised variant of the output equals a normalised gold."""
    normalized = {normalize_answer(variant) for variant in answer_variants(output)}
    return float(any(normalize_answer(gold) in normalized for gold in golds if normalize_answer(gold)))


def substring_exact_match(output: str, golds: Sequence[str]) -> float:
    """SubEM: 1.0 when a normalised gold is a substring of a normalised variant of the output."""
    variants = [normalize_answer(variant) for variant in answer_variants(output)]
    return float(any(gold and gold in variant for gold in map(normalize_answer, golds) for variant in variants))


def gold_recall(output: str, golds: Sequence[str]) -> float:
    """Fraction of gold elements found (normalised substring) in the output (RULER/EventQA recall)."""
    wanted = [gold for gold in map(normalize_answer, golds) if gold]
    if not wanted:
        return 0.0
    text = normalize_answer(strip_citations(output))
    return sum(gold in text for gold in wanted) / len(wanted)


def token_f1(prediction: str, gold: str, normalize: bool = True) -> float:
    """Token F1 between a prediction and one gold; a yes/no/noanswer mismatch scores 0 (MemoryAgentBench)."""
    pred = normalize_answer(prediction) if normalize else prediction
    truth = normalize_answer(gold) if normalize else gold
    if (pred in ("yes", "no", "noanswer") or truth in ("yes", "no", "noanswer")) and pred != truth:
        return 0.0
    pred_tokens, truth_tokens = pred.split(), truth.split()
    same = sum((Counter(pred_tokens) & Counter(truth_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)
