from __future__ import annotations

import pytest

from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.datasets.models import GroundTruth, Question
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult
from pytest_lens.suites.mab.suite import MabScorer, mab_metrics, parse_label


def case(competency: str, answers: tuple[str, ...], metric: str, stale: tuple[str, ...] = ()) -> LensCase:
    question = Question(
        question_id="q",
        scope_id="s",
        checkpoint_after=1,
        question_type=competency,
        prompt="?",
        ground_truth=GroundTruth(canonical_answer=answers[0]),
        answers=answers,
        stale_values=stale,
        meta={"mab_metric": metric},
    )
    scope = LoadedScope(scope_id="s", stream=(), questions=(question,), source="-", suite="mab")
    return LensCase("bm25", scope, question, parse_budget("16k"))


def test_parse_label_takes_the_first_label() -> None:
    assert parse_label("- hi there, card lost | Label: 42 [c1]\n- other | Label: 17 [c2]") == "42"
    assert parse_label("no label here") == "no label here"


def test_classification_uses_exact_match_on_the_parsed_label() -> None:
    output = MabScorer().score(case("test_time_learning", ("42",), "exact_match"), "- text | Label: 42 [c1]", {})
    assert output.metrics["mab_score"] == output.metrics["mab_em"] == 1.0
    wrong = MabScorer().score(case("test_time_learning", ("42",), "exact_match"), "- text | Label: 142 [c1]", {})
    assert wrong.metrics["mab_score"] == 0.0


def test_conflict_resolution_subem_and_strict_reading() -> None:
    c = case("conflict_resolution", ("Pell Adair",), "subem", stale=("Oma Tesh",))
    both = MabScorer().score(c, "The chair is Oma Tesh. The chair is Pell Adair.", {})
    assert both.metrics["mab_subem"] == 1.0
    assert both.metrics["mab_strict"] == 0.0
    assert both.details["stale_stated"] == ["Oma Tesh"]
    only_new = MabScorer().score(c, "Pell Adair.", {})
    assert only_new.metrics["mab_strict"] == 1.0


def test_recall_counts_every_gold_element() -> None:
    output = MabScorer().score(case("accurate_retrieval", ("1234567", "7654321"), "recall"), "1234567 [c2]", {})
    assert output.metrics["mab_score"] == 0.5


def test_a_question_without_golds_is_a_scoring_failure_not_a_zero() -> None:
    question = case("accurate_retrieval", ("x",), "subem").question.model_copy(update={"answers": ()})
    scope = LoadedScope(scope_id="s", stream=(), questions=(question,), source="-", suite="mab")
    output = MabScorer().score(LensCase("bm25", scope, question, parse_budget("16k")), "x", {})
    assert output.metrics == {}
    assert output.failures == ["question has no gold answers"]


def _result(competency: str, score: float, strict: float | None = None) -> QuestionResult:
    metrics = {"mab_score": score} | ({"mab_strict": strict} if strict is not None else {})
    return QuestionResult.model_validate(
        {
            **dict.fromkeys(("adapter", "scope_id", "question_id", "category", "budget", "agent", "prompt", "answer"), "x"),
            "checkpoint": 1,
            "question_type": competency,
            "cited_refs": [],
            "returned_refs": [],
            "required_refs": [],
            "tool_calls": [],
            "result_tokens": 0,
            "turns": 0,
            "agent_tokens": 0,
            "violations": [],
            "metrics": metrics,
            "composite": score,
            "gated": False,
        }
    )


def test_overall_is_the_mean_over_competencies() -> None:
    results = [_result("accurate_retrieval", 1.0), _result("accurate_retrieval", 1.0), _result("conflict_resolution", 0.0, 0.0)]
    metrics = mab_metrics(results)
    assert metrics == {"mab_ar": 1.0, "mab_cr": 0.0, "mab_overall": 0.5, "mab_strict": 0.0}
    assert mab_metrics([]) == {}
    assert pytest.approx(0.5) == metrics["mab_overall"]
