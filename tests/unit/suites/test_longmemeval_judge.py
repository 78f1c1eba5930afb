"""LongMemEval judged by the judge model (``--lens-judge=llm``), through the real client and a local server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lens_fixtures.openai_server import ChatRequest, Reply, classify
from pytest_lens.datasets.importers.longmemeval import import_longmemeval
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.datasets.models import Question
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase, build_cases
from pytest_lens.suites.base import MECHANICAL
from pytest_lens.suites.dump import dump_dataset
from pytest_lens.suites.longmemeval import JUDGE_PREAMBLE, LONGMEMEVAL_SUITE, LongMemEvalLLMJudge, LongMemEvalScorer, judge_prompt
from tests.support import JudgeRig
from tests.unit.datasets.importers.test_longmemeval import instance


def question(**changes: object) -> Question:
    return import_longmemeval([instance(**changes)]).questions[0]


TEMPORAL = question()
UPDATE = question(question_id="upd1", question_type="knowledge-update", answer="Portland")
PREFERENCE = question(question_id="pref1", question_type="single-session-preference", answer="The user would prefer vegan recipes.")
ABSTENTION = question(question_id="gpt4_x_abs", question_type="multi-session", answer="You never mentioned a second car.")


@pytest.mark.parametrize(
    ("asked", "must_contain"),
    [
        (TEMPORAL, ["Question type: temporal-reasoning", "Correct answer: GPS system not functioning correctly", "off-by-one"]),
        (UPDATE, ["Question type: knowledge-update", "Correct answer: Portland", "updated answer is the correct answer"]),
        (PREFERENCE, ["rubric for a personalised reply", "need not cover every point"]),
        (ABSTENTION, ["Explanation: You never mentioned a second car.", "cannot be answered"]),
    ],
    ids=["temporal", "update", "preference", "abstention"],
)
def test_each_question_type_gets_its_criteria(asked: Question, must_contain: list[str]) -> None:
    prompt = judge_prompt(asked, "It was the GPS. [lme_s002]\n\nSince the service.")
    assert prompt.startswith(JUDGE_PREAMBLE)
    for text in must_contain:
        assert text in prompt
    assert "It was the GPS. Since the service." in prompt.splitlines()  # citations out, one line
    assert "Correct answer" not in prompt if asked is ABSTENTION else "Explanation" not in prompt
    assert classify(ChatRequest({"model": "m", "messages": [{"role": "user", "content": prompt}]})) == "lme_judge"


Rig = JudgeRig[LongMemEvalLLMJudge]


@pytest.fixture
def make_judge(tmp_path: Path) -> Iterator[Rig]:
    """LongMemEval judges (the default policy: :class:`LongMemEvalJudgePolicy`) on local servers stopped at teardown."""
    rig = JudgeRig(tmp_path, "lme_judge", LongMemEvalLLMJudge)
    yield rig
    rig.stop()


def case_for(asked: Question, tmp_path: Path) -> LensCase:
    """A case of the imported instance, asking ``asked`` (the scorer reads only the question)."""
    path = tmp_path / "lme.json"
    path.write_text(dump_dataset(import_longmemeval([instance()])), encoding="utf-8")
    (case,) = build_cases(["bm25"], list(load_dataset(path).scopes), [parse_budget("16k")])
    return replace(case, question=asked)


@pytest.mark.parametrize(
    ("asked", "answer", "correct"),
    [
        (TEMPORAL, "The GPS system not functioning correctly, after the service.", True),
        (TEMPORAL, "The brakes squeaked.", False),
        (ABSTENTION, "I don't know: you never told me about a second car.", True),
        (ABSTENTION, "Your second car is a Honda.", False),
    ],
)
def test_the_scripted_judge_scores_like_the_mechanical_proxy(
    make_judge: Rig, tmp_path: Path, asked: Question, answer: str, correct: bool
) -> None:
    server, judge = make_judge()
    assert judge.judge(asked, answer)[:1] == (correct,)
    offline = LongMemEvalScorer().score(case_for(asked, tmp_path), answer, {})
    assert offline.metrics["lme_answer"] == float(correct)
    assert server.count(kind="lme_judge") == 1


def test_an_unusable_reply_is_repaired_once_then_recorded_as_a_judge_failure(make_judge: Rig, tmp_path: Path) -> None:
    def prose_until_asked_twice(request: ChatRequest) -> Reply:
        if request.assistant_turns:
            return Reply(content=json.dumps({"correct": True, "reason": "Repaired."}))
        return Reply(content="Yes.")

    _, judge = make_judge(prose_until_asked_twice)
    assert judge.judge(TEMPORAL, "GPS") == (True, "Repaired.", '{"correct": true, "reason": "Repaired."}', 2)

    server, judge = make_judge(lambda request: Reply(content="Yes, correct."))
    scored = LongMemEvalScorer(judge).score(case_for(TEMPORAL, tmp_path), "GPS", {})
    assert scored.metrics == {}  # unjudged: neither a pass nor a fail
    (failure,) = scored.failures
    assert failure.startswith("lme_answer: no usable LongMemEval verdict after 2 attempts (the reply is not a JSON object)")
    assert scored.details["judge"] == "llm" and server.count(kind="lme_judge") == 2


def test_the_suite_judges_through_the_llm_judge_only_when_one_is_configured(make_judge: Rig) -> None:
    _, judge = make_judge()
    judging = LONGMEMEVAL_SUITE.judging(judge.client)
    assert judging.judge.name == "llm" and "LongMemEval per-type criteria" in judging.judge.description
    (scorer,) = judging.scorers
    assert isinstance(scorer, LongMemEvalScorer) and scorer.judge is not None
    assert LONGMEMEVAL_SUITE.judging(None).judge == MECHANICAL
