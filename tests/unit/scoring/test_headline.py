"""The headline: which score the run is about, and the paper's composite beside it, unchanged."""

from __future__ import annotations

import pytest

from pytest_lens.analysis.summary import summarize
from pytest_lens.records.identity import RecordedHeadline, RunIdentity
from pytest_lens.reports.terminal import LensReport
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from pytest_lens.scoring.headline import (
    RETRIEVAL_SCORE_WEIGHTS,
    QuestionHeadlines,
    choose_headline,
    composite_label,
    suite_uses_retrieval,
)
from tests.unit.analysis.factory import result, tier1

RANKING = ("first_search_ndcg@10", "first_search_mrr")


def scored(qid: str, ndcg: float, mrr: float, **extra: float) -> dict[str, float]:
    return {**tier1(1.0, 0.5), RANKING[0]: ndcg, RANKING[1]: mrr, "first_search_ndcg@10_above_chance": ndcg - 0.1, **extra}


def test_auto_is_the_retrieval_score_without_a_judge_and_the_composite_with_one() -> None:
    kwargs = {"weights": DEFAULT_WEIGHTS, "gates": DEFAULT_GATES}
    assert choose_headline("auto", judged=False, **kwargs).name == "retrieval_score"
    assert choose_headline("auto", judged=True, **kwargs).name == "composite"
    assert choose_headline("composite", judged=False, **kwargs).gates == DEFAULT_GATES
    retrieval = choose_headline("retrieval", judged=True, **kwargs)
    assert dict(retrieval.weights) == RETRIEVAL_SCORE_WEIGHTS == {RANKING[0]: 0.5, RANKING[1]: 0.5}
    assert retrieval.gates == ()  # hard gates judge answers, not searches
    assert "0.5 x first-search nDCG@10 + 0.5 x first-search MRR" in retrieval.description
    with pytest.raises(ValueError, match="headline must be one of auto, retrieval, composite, got 'best'"):
        choose_headline("best", judged=False, **kwargs)


def test_the_composite_is_labelled_tier_1_only_without_judge_metrics() -> None:
    assert composite_label(["evidence_grounding", "fact_recall"]) == "composite (tier-1 only)"
    assert composite_label(["evidence_grounding", "answer_quality"]) == "composite"


def test_summary_headline_beside_an_unchanged_composite() -> None:
    results = [
        result("q1", scored("q1", 0.4, 0.2), adapter="good"),
        result("q2", scored("q2", 0.2, 0.0), adapter="good", question_type="temporal"),
        result("q1", scored("q1", 0.0, 0.0), adapter="random"),
        result("q2", scored("q2", 0.05, 0.1), adapter="random", question_type="temporal"),
    ]
    headline = choose_headline("auto", judged=False, weights=DEFAULT_WEIGHTS, gates=DEFAULT_GATES)
    plain = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)
    with_headline = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES, headline=headline)
    good = with_headline["good"]
    assert good.headline == pytest.approx(0.5 * 0.3 + 0.5 * 0.1) and good.headline_name == "retrieval_score"
    assert with_headline["random"].headline == pytest.approx(0.5 * 0.025 + 0.5 * 0.05)
    assert good.by_type["temporal"].headline == pytest.approx(0.1)
    for key in plain:  # the paper's composite is what it was without a headline
        assert with_headline[key].composite == plain[key].composite == plain[key].headline
        assert with_headline[key].by_type["longitudinal"].composite == plain[key].by_type["longitudinal"].composite
    assert good.composite_label == "composite (tier-1 only)"

    lines = LensReport(with_headline).lines
    header = next(line for line in lines if line.startswith("adapter"))
    assert header.split()[:6] == ["adapter", "n", "retrieval", "score", "composite", "(tier-1"]
    assert "retrieval score by question type:" in lines
    assert not any("first_search_ndcg@10_above_chance" in line for line in lines)  # metric CIs table only


def test_metrics_the_data_cannot_support_are_listed_with_their_reason() -> None:
    results = [result("q1", tier1(1.0, 0.5)), result("q2", tier1(1.0, 0.5))]
    results = [r.model_copy(update={"absent_metrics": {"fact_recall": "no key fact is printed"}}) for r in results]
    summary = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)["bm25"]
    assert "fact_recall" not in summary.metrics
    assert summary.absent_metrics == {"fact_recall": "absent on 2 of 2 questions: no key fact is printed"}
    assert "fact_recall (bm25): absent on 2 of 2 questions: no key fact is printed" in LensReport({"bm25": summary}).lines


@pytest.mark.parametrize(
    ("kind", "answers_by_model", "retrieval"),
    [
        ("auto", False, True),  # the offline agent's extractive answers, judged mechanically
        ("auto", True, False),  # an LLM agent writes them, or an LLM judge judges them
        ("retrieval", True, True),
        ("composite", False, False),  # the suite's own score
    ],
)
def test_a_sibling_suite_is_headed_by_the_retrieval_score_unless_a_model_answers_or_judges(
    kind: str, answers_by_model: bool, retrieval: bool
) -> None:
    assert suite_uses_retrieval(kind, answers_by_model=answers_by_model) is retrieval


def test_each_question_is_scored_by_its_sections_headline() -> None:
    metrics = scored("q1", 0.4, 0.2)
    lens = result("q1", metrics)
    suite = result("q1", metrics).model_copy(update={"suite": "locomo", "composite": 0.03})
    other = suite.model_copy(update={"suite": "meme"})
    run = RunIdentity(
        headline=RecordedHeadline(name="retrieval_score", weights=RETRIEVAL_SCORE_WEIGHTS, gates=[]),
        suite_headlines={
            "locomo": RecordedHeadline(name="retrieval_score", weights=RETRIEVAL_SCORE_WEIGHTS, gates=[]),
            "meme": RecordedHeadline(name="composite", weights={"meme_overall": 1.0}, gates=[]),
        },
    )
    headlines = QuestionHeadlines.of_run(run)
    assert headlines(lens) == pytest.approx(0.3) and headlines(suite) == pytest.approx(0.3)
    assert headlines(other) == 0.03  # the suite's own per-question score
    # A run saved before suites recorded a headline: every suite had its own score; LENS the composite.
    old = QuestionHeadlines.of_run(RunIdentity())
    assert old(suite) == 0.03 and old(lens) == pytest.approx(lens.composite) != pytest.approx(0.3)
