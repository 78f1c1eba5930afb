from __future__ import annotations

import random
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.datasets.models import KeyFact
from pytest_lens.judging.judge import (
    FACT_PROMPT,
    INSIGHT,
    REASONING,
    CitationEvidence,
    Comparison,
    Criterion,
    Judge,
    JudgeError,
    LLMJudge,
    OfflineJudge,
    candidate_first,
)
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats

STRONG = "Discharge pressure rose from 14.2 bar to 17.9 bar [a] while suction fell [b]."
WEAK = "The freezer room was cold."


def fact(text: str, *aliases: str) -> Criterion:
    return Criterion.fact(KeyFact(fact=text, aliases=aliases))


def comparison(criterion: Criterion, candidate: str, reference: str, key: str = "s/q/answer_quality/0", **kw: object) -> Comparison:
    return Comparison("What happened to C-2?", criterion, candidate, reference, key, **kw)  # type: ignore[arg-type]


def test_positions_are_a_fair_coin_stable_for_a_key_and_independent_of_order() -> None:
    keys = [f"scope/q{n:03d}/answer_quality/{i}" for n in range(200) for i in range(5)]
    draws = {key: candidate_first(42, key) for key in keys}
    shuffled = keys[:]
    random.Random(1).shuffle(shuffled)
    assert {key: candidate_first(42, key) for key in shuffled} == draws
    share = sum(draws.values()) / len(draws)
    assert 0.45 < share < 0.55
    assert sum(candidate_first(43, key) == draws[key] for key in keys) < len(keys) * 0.6  # the seed matters


@pytest.mark.parametrize(
    ("criterion", "candidate", "reference", "winner"),
    [
        (fact("17.9 bar"), STRONG, "It reached 17.9 bar.", "tie"),
        (fact("17.9 bar"), STRONG, WEAK, "candidate"),
        (fact("17.9 bar"), WEAK, STRONG, "reference"),
        (fact("17.9 bar"), WEAK, WEAK, "tie"),
        (fact("95 min", "95 minutes"), "stayed above the limit for 95 minutes", "for 95 min", "tie"),
        (fact("95 min", "95 minutes"), "for 95 minutes", WEAK, "candidate"),
        (fact("Compressor C-2"), "the compressor c-2 failed", "nothing", "candidate"),
    ],
)
def test_offline_judge_matches_key_facts_with_aliases(criterion: Criterion, candidate: str, reference: str, winner: str) -> None:
    judgment = OfflineJudge().compare(comparison(criterion, candidate, reference))
    assert judgment.winner == winner
    assert judgment.candidate_position is None


@pytest.mark.parametrize(
    ("criterion", "answer", "grounded", "winner"),
    [
        (INSIGHT, STRONG, 2, "candidate"),
        (INSIGHT, STRONG, 1, "reference"),
        (REASONING, STRONG, 1, "candidate"),
        (REASONING, "Short [a].", 1, "reference"),
        (REASONING, STRONG, 0, "reference"),
    ],
)
def test_offline_judge_uses_the_reference_definitions_for_insight_and_reasoning(
    criterion: Criterion, answer: str, grounded: int, winner: str
) -> None:
    judgment = OfflineJudge().compare(comparison(criterion, answer, "canonical", evidence=CitationEvidence(2, grounded)))
    assert judgment.winner == winner


def test_offline_judge_refuses_a_rubric_without_evidence() -> None:
    with pytest.raises(JudgeError, match="needs citation evidence"):
        OfflineJudge().compare(comparison(INSIGHT, STRONG, "x"))


def judge_for(server: OpenAITestServer, tmp_path: Path, seed: int = 42) -> LLMJudge:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=1, backoff_base_s=0.001)
    return LLMJudge(ChatClient(endpoint, "judge-m", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats()), seed=seed)


def test_llm_judge_maps_positions_back_to_the_candidate(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        judge = judge_for(server, tmp_path)
        assert isinstance(judge, Judge)
        results = [judge.compare(comparison(fact("17.9 bar"), STRONG, WEAK, key=f"s/q/aq/{i}")) for i in range(12)]
        prompts = [r.body["messages"][0]["content"] for r in server.requests]
    assert {r.winner for r in results} == {"candidate"}
    assert {r.candidate_position for r in results} == {"A", "B"}  # both positions were used ...
    for judgment, prompt in zip(results, prompts, strict=True):  # ... and the prompt put the candidate there
        first, second = (STRONG, WEAK) if judgment.candidate_position == "A" else (WEAK, STRONG)
        assert prompt == FACT_PROMPT.format(question="What happened to C-2?", finding="17.9 bar", text_a=first, text_b=second)


def test_llm_judge_shows_aliases_and_empty_answers(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        judgment = judge_for(server, tmp_path).compare(comparison(fact("95 min", "95 minutes"), "", "for 95 minutes"))
        prompt = server.requests[0].body["messages"][0]["content"]
    assert "Finding to evaluate: 95 min (equivalent wording: 95 minutes)" in prompt
    assert "(empty response)" in prompt
    assert judgment.winner == "reference"


def test_an_unusable_verdict_gets_one_repair_prompt(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("content", text="Both responses are good.", limit=1)]) as server:
        judgment = judge_for(server, tmp_path).compare(comparison(fact("17.9 bar"), STRONG, WEAK))
        second = server.requests[1].body["messages"]
    assert judgment.winner == "candidate"
    assert judgment.attempts == 2
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[2]["content"] == (
        "That reply could not be used: the reply 'Both responses are good.' is not one of A, B, TIE. "
        "Respond with ONLY one word: A, B, or TIE"
    )


def test_a_judge_that_never_gives_a_verdict_fails_instead_of_tying(tmp_path: Path) -> None:
    with (
        OpenAITestServer(faults=[Fault("content", text="Hmm.")]) as server,
        pytest.raises(
            JudgeError,
            match=r"no usable verdict \(A, B or TIE\) after 2 attempts \(the reply 'Hmm\.' is not one of A, B, TIE\); "
            r"last reply 'Hmm\.'",
        ),
    ):
        judge_for(server, tmp_path).compare(comparison(fact("17.9 bar"), STRONG, WEAK))


def test_endpoint_failures_become_judge_errors(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("status", status=500, permanent=True)]) as server:
        with pytest.raises(JudgeError, match="HTTP 500"):
            judge_for(server, tmp_path).compare(comparison(fact("17.9 bar"), STRONG, WEAK))
        assert server.count() == 2  # one retry


def test_rubric_prompts_name_the_criterion(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        judgment = judge_for(server, tmp_path).compare(comparison(INSIGHT, STRONG, "No citations here."))
        prompt = server.requests[0].body["messages"][0]["content"]
    assert "Criterion to evaluate: Insight depth:" in prompt
    assert judgment.winner == "candidate"
