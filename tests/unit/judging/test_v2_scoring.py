"""LENS V2's metrics: per-fact judging (strict verdicts, failures absent and counted), evidence support, citation validity."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.openai_server import FactCheckPolicy, LensPolicy, OpenAITestServer
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.judging.fact_judge import parse_support, parse_yes_no
from pytest_lens.judging.judge import LLMJudge, OfflineJudge
from pytest_lens.judging.v2 import V2_WEIGHTS, V2Scorer, preset_weights
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats, counting
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase
from pytest_lens.scoring.composite import DEFAULT_WEIGHTS
from pytest_lens.scoring.scorer import CitedSources
from tests.support import COLD_CHAIN_DEMO

SCOPE = load_dataset(COLD_CHAIN_DEMO).scopes[0]
TEXTS = {episode.episode_id: episode.text for episode in SCOPE.stream}
#: States "refrigerant leak" and "C-2 service valve" (both in the cited episode 016), not "30% low".
ANSWER = "Technician found a refrigerant leak at the compressor C-2 service valve [cold_chain_demo_016]."


def case(question_id: str = "ccd_q07_longitudinal") -> LensCase:
    return LensCase("bm25", SCOPE, next(q for q in SCOPE.questions if q.question_id == question_id), parse_budget("16k"))


def sources(*refs: str) -> CitedSources:
    valid = [ref for ref in refs if ref in TEXTS]
    return CitedSources(list(refs), valid, {ref: TEXTS[ref] for ref in valid})


def llm_judge(server: OpenAITestServer, tmp_path: Path) -> LLMJudge:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=0)
    return LLMJudge(ChatClient(endpoint, "judge-m", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats()), seed=42)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("YES", True), ("no", False), (" Yes. ", True), ("<think>it says so</think>\nNO", False), ("**YES**", True),
     ("Yes, the answer says so", None), ("YES or NO", None), ("", None), ("I think NO", None)],
)  # fmt: skip
def test_a_fact_verdict_is_strictly_yes_or_no(reply: str, verdict: bool | None) -> None:
    assert parse_yes_no(reply) is verdict


@pytest.mark.parametrize(("reply", "rating"), [("3", 3), ("0.", 0), ("4", 4), ("5", None), ("3/4", None), ("about 3", None)])
def test_a_support_rating_is_one_digit_of_the_scale(reply: str, rating: int | None) -> None:
    assert parse_support(reply) == rating


def test_the_llm_judge_decides_each_fact_and_the_verdicts_are_kept(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        output = V2Scorer(llm_judge(server, tmp_path)).score(case(), ANSWER, {}, sources("cold_chain_demo_016"))
        fact_requests = server.count(kind="fact_judge")
    assert fact_requests == 3
    assert [(f["fact"], f["present"]) for f in output.details["facts"]] == [
        ("refrigerant leak", True),
        ("C-2 service valve", True),
        ("30% low", False),
    ]
    assert output.metrics["fact_recall_judged"] == pytest.approx(2 / 3)
    assert output.metrics["citation_validity"] == 1.0
    assert output.metrics["evidence_support"] == 1.0  # every word of the answer's sentence is in episode 016
    assert output.failures == []


def test_the_facts_judged_at_once_count_for_the_question_being_judged(tmp_path: Path) -> None:
    # Judged on worker threads (concurrency 4), each fact's request still counts for the question, as the pairwise
    # judge's do: a question's llm counts in the artifact are its own.
    with OpenAITestServer() as server, counting() as judged:
        V2Scorer(llm_judge(server, tmp_path), concurrency=4).score(case(), ANSWER, {}, sources("cold_chain_demo_016"))
        sent = server.count()
    assert judged.snapshot().requests == sent >= 3


def test_a_judge_answering_prose_for_one_fact_makes_the_metric_absent_and_counts_a_failure(tmp_path: Path) -> None:
    policy = LensPolicy(fact_judge=FactCheckPolicy(prose_for=("30% low",)))
    with OpenAITestServer(policy) as server:
        output = V2Scorer(llm_judge(server, tmp_path)).score(case(), ANSWER, {}, sources("cold_chain_demo_016"))
        prose_requests = sum(1 for r in server.requests if r.kind == "fact_judge" and "30% low" in str(r.body))
    assert prose_requests == 2  # the question, then one repair
    assert "fact_recall_judged" not in output.metrics  # never read as "absent" (0) nor dropped from the mean
    (failure,) = output.failures
    assert failure.startswith(
        "fact_recall_judged: fact 3 ('30% low'): no usable verdict (YES or NO) after 2 attempts (the reply 'The answer touches on"
    )
    assert "is not one of YES, NO); last reply 'The answer touches on this finding in places" in failure
    assert output.details["facts"][2] == {"fact": "30% low", "error": output.failures[0].split(": ", 2)[2]}
    assert output.details["failed_judgments"] == 1
    assert {"evidence_support", "citation_validity"} <= set(output.metrics)


def test_unsupported_claims_and_invalid_citations_score_low(tmp_path: Path) -> None:
    answer = "The dock door alarms caused the warming, confirmed by the landlord's invoice [cold_chain_demo_001] [made_up_ref]."
    with OpenAITestServer() as server:
        output = V2Scorer(llm_judge(server, tmp_path)).score(case(), answer, {}, sources("cold_chain_demo_001", "made_up_ref"))
    assert output.metrics["citation_validity"] == 0.5
    assert output.metrics["evidence_support"] == 0.0
    assert output.metrics["fact_recall_judged"] == 0.0


def test_nothing_cited_is_invalid_and_unsupported_without_asking(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        output = V2Scorer(llm_judge(server, tmp_path)).score(case(), "A refrigerant leak.", {}, sources())
        support_requests = server.count(kind="support_judge")
    assert support_requests == 0
    assert (output.metrics["citation_validity"], output.metrics["evidence_support"]) == (0.0, 0.0)


def test_a_question_without_key_facts_has_no_judged_fact_recall() -> None:
    question = case().question
    bare = question.model_copy(update={"ground_truth": question.ground_truth.model_copy(update={"key_facts": ()})})
    output = V2Scorer(OfflineJudge()).score(LensCase("bm25", SCOPE, bare, parse_budget("16k")), ANSWER, {}, sources("cold_chain_demo_016"))
    assert "fact_recall_judged" not in output.metrics and "facts" not in output.details
    assert output.failures == []


def test_the_offline_judge_matches_facts_and_aliases_and_gives_no_support_rating() -> None:
    output = V2Scorer(OfflineJudge()).score(case(), ANSWER, {}, sources("cold_chain_demo_016"))
    assert output.metrics["fact_recall_judged"] == pytest.approx(2 / 3)
    assert "evidence_support" not in output.metrics  # the offline judge cannot read support: absent, not guessed
    assert output.metrics["citation_validity"] == 1.0


def test_without_a_judge_only_citation_validity_is_scored() -> None:
    output = V2Scorer(None).score(case(), ANSWER, {}, sources("cold_chain_demo_016", "nope"))
    assert output.metrics == {"citation_validity": 0.5}


def test_the_v2_preset_weighs_v2s_metrics_only() -> None:
    weights = preset_weights("v2")
    assert (
        {name: w for name, w in weights.items() if w > 0}
        == V2_WEIGHTS
        == {
            "fact_recall_judged": 0.5,
            "evidence_support": 0.3,
            "citation_validity": 0.2,
        }
    )
    assert preset_weights("paper") == DEFAULT_WEIGHTS
    with pytest.raises(ValueError, match="unknown scoring preset"):
        preset_weights("v3")
