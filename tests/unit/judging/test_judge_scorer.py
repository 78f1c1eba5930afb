from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.judging.baseline import OfflineBaseline
from pytest_lens.judging.judge import Comparison, Criterion, LLMJudge, OfflineJudge
from pytest_lens.judging.judge_scorer import JudgeScorer, longitudinal_advantage
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult
from tests.support import COLD_CHAIN_DEMO

SCOPE = load_dataset(COLD_CHAIN_DEMO).scopes[0]
ROOT_CAUSE = "A refrigerant leak at the C-2 service valve [cold_chain_demo_016], seen as falling suction pressure [cold_chain_demo_013]."


def case_for(question_id: str, adapter: str = "bm25") -> LensCase:
    return LensCase(adapter, SCOPE, next(q for q in SCOPE.questions if q.question_id == question_id), parse_budget("16k"))


def test_offline_judging_of_an_answer() -> None:
    case = case_for("ccd_q07_longitudinal")
    output = JudgeScorer(OfflineJudge(), OfflineBaseline()).score(case, ROOT_CAUSE, {"evidence_grounding": 1.0})
    # "refrigerant leak" and "C-2 service valve" tie with the canonical answer; "30% low" is only in the canonical.
    assert output.metrics["answer_quality"] == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert output.metrics["insight_depth"] == 1.0  # two distinct grounded refs
    assert output.metrics["reasoning_quality"] == 1.0
    assert "action_quality" not in output.metrics
    baseline = output.details["baseline"]["answer"]
    expected = [
        OfflineJudge().compare(Comparison(case.question.prompt, Criterion.fact(f), ROOT_CAUSE, baseline, "k")).score
        for f in case.question.ground_truth.key_facts
    ]
    assert output.metrics["naive_baseline_advantage"] == pytest.approx(sum(expected) / len(expected))
    assert output.failures == []
    assert [j["metric"] for j in output.details["judgments"]].count("answer_quality") == 3


def test_grounding_decides_the_offline_insight_and_reasoning() -> None:
    output = JudgeScorer(OfflineJudge()).score(case_for("ccd_q07_longitudinal"), ROOT_CAUSE, {"evidence_grounding": 0.5})
    assert (output.metrics["insight_depth"], output.metrics["reasoning_quality"]) == (0.0, 1.0)
    assert "naive_baseline_advantage" not in output.metrics  # no baseline configured


def test_action_quality_is_the_answer_quality_of_action_questions() -> None:
    answer = "Leak-check every compressor quarterly [cold_chain_demo_016]."
    output = JudgeScorer(OfflineJudge()).score(case_for("ccd_q08_action_recommendation"), answer, {"evidence_grounding": 1.0})
    assert output.metrics["action_quality"] == output.metrics["answer_quality"] == pytest.approx(0.25)


def test_questions_without_key_facts_have_no_fact_metrics() -> None:
    question = case_for("ccd_q07_longitudinal").question
    bare = question.model_copy(update={"ground_truth": question.ground_truth.model_copy(update={"key_facts": ()})})
    case = LensCase("bm25", SCOPE, bare, parse_budget("16k"))
    output = JudgeScorer(OfflineJudge(), OfflineBaseline()).score(case, ROOT_CAUSE, {"evidence_grounding": 1.0})
    assert set(output.metrics) == {"insight_depth", "reasoning_quality"}
    assert "baseline" not in output.details


def llm_scorer(server: OpenAITestServer, tmp_path: Path) -> JudgeScorer:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=1, backoff_base_s=0.001)
    client = ChatClient(endpoint, "judge-m", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats())
    return JudgeScorer(LLMJudge(client, seed=42), OfflineBaseline())


def test_a_failed_judgment_leaves_its_metric_absent_and_is_reported(tmp_path: Path) -> None:
    # Every judge request about the "30% low" finding fails for good.
    with OpenAITestServer(
        faults=[Fault("status", status=500, permanent=True, only="judge", contains="Finding to evaluate: 30% low")]
    ) as server:
        output = llm_scorer(server, tmp_path).score(case_for("ccd_q07_longitudinal"), ROOT_CAUSE, {"evidence_grounding": 1.0})
    assert "answer_quality" not in output.metrics
    assert "naive_baseline_advantage" not in output.metrics
    assert {"insight_depth", "reasoning_quality"} <= set(output.metrics)
    assert len(output.failures) == 2
    assert output.failures[0].startswith("answer_quality: fact 3 ('30% low'): LLM request to")
    assert "HTTP 500" in output.failures[0]
    assert output.details["failed_judgments"] == 2
    judged = [j for j in output.details["judgments"] if j["metric"] == "answer_quality"]
    assert [("error" in j) for j in judged] == [False, False, True]


def test_llm_judging_is_the_same_whatever_the_order_or_adapter(tmp_path: Path) -> None:
    cases = [case_for("ccd_q07_longitudinal", "a"), case_for("ccd_q03_longitudinal", "a"), case_for("ccd_q07_longitudinal", "b")]
    with OpenAITestServer() as server:
        scorer = llm_scorer(server, tmp_path)
        forward = [scorer.score(case, ROOT_CAUSE, {"evidence_grounding": 1.0}) for case in cases]
        backward = [scorer.score(case, ROOT_CAUSE, {"evidence_grounding": 1.0}) for case in reversed(cases)][::-1]
    assert [o.metrics for o in forward] == [o.metrics for o in backward]
    assert forward[0].details == forward[2].details  # same question, another adapter: same positions, same verdicts
    positions = [j["candidate_position"] for o in forward for j in o.details["judgments"]]
    assert set(positions) == {"A", "B"}


def result(category: str, quality: float | None) -> QuestionResult:
    return QuestionResult(
        adapter="a",
        scope_id="s",
        checkpoint=1,
        question_id=f"q{id(object())}",
        question_type="x",
        category=category,
        budget="16k",
        agent="offline",
        prompt="p",
        metrics={} if quality is None else {"answer_quality": quality},
        composite=0.0,
        gated=False,
    )


def test_longitudinal_advantage_is_synthesis_minus_control() -> None:
    results = [
        result("synthesis", 0.8),
        result("synthesis", 0.4),
        result("control", 0.5),
        result("decision", 0.0),
        result("synthesis", None),
    ]
    assert longitudinal_advantage(results) == {"longitudinal_advantage": pytest.approx(0.1)}
    assert longitudinal_advantage([result("synthesis", 0.8)]) == {}
    assert longitudinal_advantage([result("control", 0.8), result("synthesis", None)]) == {}
