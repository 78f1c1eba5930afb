"""The LoCoMo suite (imported conversations): LoCoMo's token F1 per category, next to the tier-1 metrics.

LoCoMo's ``task_eval/evaluation.py``: answers are normalised (commas and punctuation dropped, lower case,
articles and "and" removed), compared by token F1; multi-hop (category 1) golds and predictions are split
on commas and each gold takes its best-matching prediction; open-domain (category 3) golds are cut at the
first ";"; adversarial (category 5) questions score 1 when the answer says "no information available" or
"not mentioned". Tokens are stemmed with nltk's Porter stemmer, as LoCoMo does, when nltk is installed
(``pip install 'pytest-lens[locomo]'``); without it tokens are compared unstemmed (slightly stricter on
inflected words), and each result and the suite's section say which was used.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping
from functools import cache

from pytest_lens.extras import install_command
from pytest_lens.records.cases import LensCase
from pytest_lens.scoring.scorer import QuestionScorer, ScorerOutput
from pytest_lens.suites.answers import strip_citations
from pytest_lens.suites.base import Suite, SuiteReport, plain_type_summaries

__all__ = ["LOCOMO_SUITE", "LocomoScorer", "locomo_f1", "locomo_normalize", "stemmer"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def locomo_normalize(text: str) -> str:
    """LoCoMo's answer normalisation."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@cache
def _porter() -> Callable[[str], str] | None:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError:
        return None
    stem: Callable[[str], str] = PorterStemmer().stem
    return stem


def stemmer() -> str:
    """The stemming LoCoMo's F1 gets here: ``porter`` (nltk, as LoCoMo) or ``none`` (nltk not installed)."""
    return "porter" if _porter() is not None else "none"


def _tokens(text: str) -> list[str]:
    words = locomo_normalize(text).split()
    stem = _porter()
    return words if stem is None else [stem(word) for word in words]


def _f1(prediction: str, gold: str) -> float:
    pred, truth = _tokens(prediction), _tokens(gold)
    same = sum((Counter(pred) & Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: int | None) -> float:
    """LoCoMo's per-category answer score for one prediction."""
    prediction = strip_citations(prediction)
    if category == 5:
        lowered = prediction.lower()
        return float("no information available" in lowered or "not mentioned" in lowered)
    if category == 1:
        predictions = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in gold.split(",")]
        return sum(max(_f1(p, g) for p in predictions) for g in golds) / len(golds)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return _f1(prediction, gold)


class LocomoScorer:
    """``locomo_f1`` for imported LoCoMo questions (category from ``meta.category``)."""

    name = "locomo"

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """LoCoMo's F1 of ``answer`` against the gold answer."""
        question = case.question
        category = question.meta.get("category")
        gold = str(question.meta.get("answer", question.ground_truth.canonical_answer))
        value = locomo_f1(answer, gold, category if isinstance(category, int) else None)
        return ScorerOutput(metrics={"locomo_f1": value}, details={"category": category, "judge": "mechanical", "stemmer": stemmer()})


def _stemming_line(report: SuiteReport) -> list[str]:
    used = sorted({str(r.scorer_details.get("locomo", {}).get("stemmer", "none")) for r in report.results if r.skipped is None})
    if not used:
        return []
    if used == ["porter"]:
        return ["", "  F1 tokens Porter-stemmed (nltk), as LoCoMo's evaluation does"]
    return [
        "",
        f"  F1 tokens stemmed: {', '.join(used)}; LoCoMo stems with Porter: {install_command('locomo')} for comparable F1",
    ]


LOCOMO_SUITE = Suite(
    name="locomo",
    title="LoCoMo: very long-term conversational memory (imported)",
    headline="LoCoMo F1 = token F1 of the answer against the gold answer (LoCoMo's per-category rules)",
    score_label="LoCoMo F1",
    question_weights={"locomo_f1": 1.0},
    summary_weights={"locomo_f1": 1.0},
    make_scorers=lambda: (LocomoScorer(),),
    type_summaries=plain_type_summaries({"locomo_f1": 1.0}),
    columns=(
        ("evidence_coverage", "ev.coverage"),
        ("evidence_grounding", "grounding"),
        ("citation_coverage", "cit.coverage"),
        ("fact_recall", "fact_recall"),
        ("budget_compliance", "budget"),
    ),
    extra_lines=_stemming_line,
)

_: QuestionScorer = LocomoScorer()
