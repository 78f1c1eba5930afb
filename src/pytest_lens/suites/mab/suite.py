"""The MemoryAgentBench suite: the paper's per-competency metrics and its report section.

Per question: ``mab_subem``, ``mab_em`` and ``mab_recall`` against the gold answers (MemoryAgentBench's
normalisation), ``mab_score`` = the metric the paper uses for the question's dataset (``meta.mab_metric``:
SubEM for accurate retrieval and conflict resolution, exact match on the parsed label for test-time
learning, recall of every gold element for multi-needle retrieval and long-range questions), and, where
superseded values are known, ``mab_strict`` = SubEM with no superseded value stated. SubEM credits an
answer that contains the gold anywhere, so an extractive answer quoting both the old and the new fact
passes it; ``mab_strict`` is the honest reading of conflict resolution for such agents.

Headline: the mean over competencies of each competency's mean ``mab_score``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import GroupSummary, QuestionResult
from pytest_lens.scoring.scorer import QuestionScorer, ScorerOutput
from pytest_lens.suites.answers import exact_match, gold_recall, strip_citations, substring_exact_match, token_f1
from pytest_lens.suites.base import Suite, type_summary
from pytest_lens.suites.meme.tasks import mentions

__all__ = ["COMPETENCY_CODES", "MAB_SUITE", "MabScorer", "mab_metrics", "parse_label"]

#: Competencies (question types of the ``mab`` suite) and the paper's abbreviations, in report order.
COMPETENCY_CODES: dict[str, str] = {
    "accurate_retrieval": "AR",
    "test_time_learning": "TTL",
    "long_range_understanding": "LRU",
    "conflict_resolution": "CR",
}
_DEFAULT_METRIC = {"accurate_retrieval": "subem", "test_time_learning": "exact_match", "long_range_understanding": "recall"}
_LABEL = re.compile(r"label\s*:\s*([\w-]+)", re.IGNORECASE)


def parse_label(answer: str) -> str:
    """The first ``label: X`` in an answer (MemoryAgentBench parses classification outputs), else the answer."""
    match = _LABEL.search(strip_citations(answer))
    return match.group(1) if match else answer


class MabScorer:
    """Scores answers to MemoryAgentBench questions against their gold answers."""

    name = "mab"

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """SubEM, exact match, recall, the paper's metric for this question, and the strict conflict reading."""
        question = case.question
        golds = list(question.answers) or [fact.fact for fact in question.ground_truth.key_facts]
        if not golds:
            return ScorerOutput(failures=["question has no gold answers"])
        metric = str(question.meta.get("mab_metric") or _DEFAULT_METRIC.get(question.question_type, "subem"))
        values = {
            "mab_subem": substring_exact_match(answer, golds),
            "mab_em": exact_match(parse_label(answer) if metric == "exact_match" else answer, golds),
            "mab_recall": gold_recall(answer, golds),
        }
        if metric == "f1":
            values["mab_f1"] = max(token_f1(strip_citations(answer), gold) for gold in golds)
        primary = {"subem": "mab_subem", "exact_match": "mab_em", "recall": "mab_recall", "f1": "mab_f1"}.get(metric, "mab_subem")
        values["mab_score"] = values[primary]
        stale = [value for value in question.stale_values if mentions(answer, value)]
        if question.stale_values:
            values["mab_strict"] = float(values["mab_subem"] == 1.0 and not stale)
        details = {"metric": metric, "competency": question.question_type, "stale_stated": stale, "judge": "mechanical"}
        return ScorerOutput(metrics=values, details=details)


def mab_metrics(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Per-competency means of ``mab_score`` (``mab_ar`` ...) and their mean, ``mab_overall``."""
    by_competency: dict[str, list[float]] = defaultdict(list)
    strict: list[float] = []
    for result in results:
        if "mab_score" in result.metrics:
            by_competency[result.question_type].append(result.metrics["mab_score"])
        if "mab_strict" in result.metrics:
            strict.append(result.metrics["mab_strict"])
    metrics = {f"mab_{COMPETENCY_CODES.get(c, c).lower()}": sum(v) / len(v) for c, v in by_competency.items()}
    if by_competency:
        metrics["mab_overall"] = sum(metrics.values()) / len(metrics)
    if strict:
        metrics["mab_strict"] = sum(strict) / len(strict)
    return metrics


def mab_type_summaries(results: Sequence[QuestionResult]) -> dict[str, GroupSummary]:
    """Per competency, scored by the mean of the paper's metric."""
    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_type[result.question_type].append(result)
    out = {}
    for qtype, items in sorted(by_type.items()):
        scored = [r.metrics["mab_score"] for r in items if "mab_score" in r.metrics]
        out[qtype] = type_summary(items, sum(scored) / len(scored) if scored else 0.0)
    return out


MAB_SUITE = Suite(
    name="mab",
    title="MemoryAgentBench: accurate retrieval, test-time learning, long-range understanding, conflict resolution",
    score_label="MAB overall",
    headline="MAB overall = mean over competencies of the paper's metric (AR SubEM/recall, TTL exact match, LRU recall, CR SubEM)",
    question_weights={"mab_score": 1.0},
    summary_weights={"mab_overall": 1.0},
    make_scorers=lambda: (MabScorer(),),
    group_metrics=(mab_metrics,),
    type_summaries=mab_type_summaries,
    stratify_by_type=True,
    columns=(
        *((f"mab_{code.lower()}", code) for code in COMPETENCY_CODES.values()),
        ("mab_strict", "CR strict"),
        ("mab_subem", "SubEM"),
        ("mab_em", "EM"),
        ("mab_recall", "recall"),
        ("evidence_coverage", "ev.coverage"),
    ),
    bundled=True,
)

_: QuestionScorer = MabScorer()
