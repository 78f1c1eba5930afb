from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import ChatRequest, Fault, LensPolicy, MemeJudgePolicy, Reply
from lens_fixtures.openai_server.policies import MemeFlaw
from pytest_lens.datasets import load_dataset
from pytest_lens.datasets.bundled import bundled_suite_paths
from pytest_lens.datasets.key_facts import DELETED_FACT, UNCERTAIN_FACT
from pytest_lens.datasets.models import GroundTruth, KeyFact, Question
from pytest_lens.judging.judge import JudgeError
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase, build_cases
from pytest_lens.suites.meme.llm_judge import (
    JUDGE_PREAMBLE,
    MemeLLMJudge,
    UnusableReply,
    prompt_kind,
    read_reply,
    render_prompt,
)
from pytest_lens.suites.meme.suite import MemeScorer
from pytest_lens.suites.meme.tasks import judge_probe
from tests.support import JudgeRig

TRACK = ["Birchwood", "Calloway", "Danforth"]


def probe(
    task: str, values: list[str] | None = None, phase: str = "after", stale: tuple[str, ...] = (), facts: list[KeyFact] | None = None
) -> Question:
    return Question(
        question_id=f"q_{task}_{phase}",
        scope_id="s",
        checkpoint_after=1,
        question_type=task,
        prompt="Where is it?",
        ground_truth=GroundTruth(canonical_answer="the gold answer", key_facts=tuple(facts or [KeyFact(fact=v) for v in values or []])),
        phase=phase,  # type: ignore[arg-type]
        entity="e",
        stale_values=stale,
    )


Rig = JudgeRig[MemeLLMJudge]


@pytest.fixture
def make_judge(tmp_path: Path) -> Iterator[Rig]:
    """MEME judges (the default policy: :class:`MemeJudgePolicy`) on local servers stopped at teardown."""
    rig = JudgeRig(tmp_path, "meme_judge", MemeLLMJudge)
    yield rig
    rig.stop()


# -- prompts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "must_contain"),
    [
        (probe("cascade", ["Zofia"], phase="before"), ["Task: Recall before the change", "Expected value:\n- Zofia", "semantically"]),
        (probe("tracking", TRACK), ["Gold history, oldest first:\n- Birchwood\n- Calloway\n- Danforth", "EXACT chronological order"]),
        (probe("aggregation", ["a", "b"]), ["Values that must all be present:\n- a\n- b", '"results": [{"value"']),
        (probe("cascade", ["Ciaran"], stale=("Zofia",)), ["Current value:\n- Ciaran\nOutdated value:\n- Zofia", "sole, definitive"]),
        (probe("absence", facts=[UNCERTAIN_FACT], stale=("Mikkel",)), ["which may no longer hold:\n- Mikkel", "not sure"]),
        (probe("deletion", facts=[DELETED_FACT], stale=("Quillon",)), ["Deleted value:\n- Quillon", "WITHOUT revealing"]),
    ],
)
def test_each_task_gets_its_own_prompt_with_its_values(question: Question, must_contain: list[str]) -> None:
    prompt = render_prompt(question, "It is Ciaran [meme_s03].\n\nSecond   line.")
    assert prompt.startswith(JUDGE_PREAMBLE)
    for text in must_contain:
        assert text in prompt
    assert "Question: Where is it?\nReference answer: the gold answer" in prompt
    assert "<answer>\nIt is Ciaran .\n\nSecond line.\n</answer>" in prompt  # citations dropped, as the mechanical judges do
    assert prompt.rstrip().endswith("}")
    assert '"reason": "one sentence"' in prompt


def test_exact_recall_is_never_sent_to_the_llm_and_unknown_tasks_have_no_protocol() -> None:
    assert prompt_kind(probe("exact_recall", ["panic: x"])) is None
    assert prompt_kind(probe("exact_recall", ["panic: x"], phase="before")) is None
    with pytest.raises(JudgeError, match="no LLM judging protocol for task 'summary'"):
        render_prompt(probe("summary", ["x"]), "answer")
    with pytest.raises(JudgeError, match="needs the deleted value"):
        render_prompt(probe("deletion", facts=[DELETED_FACT]), "answer")


def test_an_empty_answer_is_shown_as_such() -> None:
    assert "<answer>\n(empty answer)\n</answer>" in render_prompt(probe("cascade", ["x"], stale=("y",)), " [s1] ")


# -- replies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "passed", "reason"),
    [
        ('{"correct": true, "reason": "States the new value only."}', True, "States the new value only."),
        ('```json\n{"correct": false, "reason": "Gives  both."}\n```', False, "Gives both."),
        ('<think>Both? {"correct": true}</think>{"correct": false, "reason": "Hedges."}', False, "Hedges."),
    ],
)
def test_verdicts_are_read_from_the_json_object(reply: str, passed: bool, reason: str) -> None:
    verdict = read_reply(reply, "cascade", ["x"])
    assert (verdict.passed, verdict.reason, verdict.partial) == (passed, reason, None)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("The answer is correct.", "not a JSON object"),
        ('Verdict: {"correct": true, "reason": "ok"} (done)', "not only a JSON object"),  # the reply must be the verdict
        ("[true]", "a JSON list, not an object"),
        ('{"correct": true}', '"reason" is missing'),
        ('{"correct": true, "reason": "  "}', '"reason" is missing'),
        ('{"reason": "fine"}', '"correct" is missing'),
        ('{"correct": "true", "reason": "fine"}', '"correct" is missing or not true/false'),
    ],
)
def test_unusable_verdicts_say_what_is_wrong(reply: str, problem: str) -> None:
    with pytest.raises(UnusableReply, match=problem):
        read_reply(reply, "absence", [])


def test_aggregation_passes_only_with_every_value_present_and_credits_the_share() -> None:
    def reply(*present: bool, correct: bool = True) -> str:
        results = [{"value": v, "present": p} for v, p in zip(["Tuesday afternoons", "weekly on Thursdays"], present, strict=True)]
        return json.dumps({"results": results, "correct": correct, "reason": "r"})

    values = ["Tuesday afternoons", "Weekly on Thursdays"]  # values match after normalisation
    both = read_reply(reply(True, True), "aggregation", values)
    assert (both.passed, both.partial) == (True, 1.0)
    one = read_reply(reply(True, False, correct=True), "aggregation", values)  # the per-value results decide, not "correct"
    assert (one.passed, one.partial) == (False, 0.5)
    with pytest.raises(UnusableReply, match="says nothing usable about 'Blockers first'"):
        read_reply(reply(True, True), "aggregation", [*values, "Blockers first"])
    with pytest.raises(UnusableReply, match='"results" is missing'):
        read_reply('{"correct": true, "reason": "r"}', "aggregation", values)


# -- the judge over HTTP ---------------------------------------------------------------------


def bundled_questions() -> list[Question]:
    return list(load_dataset(bundled_suite_paths("meme")[0]).dataset.questions)


def test_through_the_test_server_the_llm_judge_agrees_with_the_mechanical_rules(make_judge: Rig) -> None:
    server, judge = make_judge()
    checked = 0
    for question in bundled_questions()[:26]:  # two episodes: every task, both phases, both hops
        for answer in (question.ground_truth.canonical_answer, f"It is {' and '.join(question.stale_values) or 'unknown'}."):
            judged = judge.judge(question, answer)
            assert judged.verdict.passed == judge_probe(question, answer).passed, (question.question_id, answer)
            if question.question_type == "exact_recall":
                assert (judged.by, judged.attempts) == ("mechanical", 0)
            else:
                assert (judged.by, judged.attempts) == ("llm", 1)
                assert json.loads(judged.raw)["reason"].startswith("Mechanical rule:")
            checked += 1
    assert checked == 52
    requests = [r for r in server.requests if r.kind == "meme_judge"]
    assert len(requests) == 48  # exact recall is never sent
    body = requests[0].body
    assert (body["temperature"], body["response_format"], body["model"]) == (0.0, {"type": "json_object"}, "judge-m")


def test_tracking_partial_credit_is_the_position_based_count(make_judge: Rig) -> None:
    _, judge = make_judge()
    judged = judge.judge(probe("tracking", TRACK), "First Calloway, then Birchwood, now Danforth.")
    assert judged.verdict.passed is False
    assert judged.verdict.partial == pytest.approx(2 / 3)


@pytest.mark.parametrize("flaw", ["prose", "missing_field"])
@pytest.mark.parametrize("task", ["cascade", "aggregation"])
def test_an_unusable_reply_gets_one_repair_request(make_judge: Rig, flaw: MemeFlaw, task: str) -> None:
    server, judge = make_judge(MemeJudgePolicy(flaw=flaw, repairable=True))
    question = probe(task, ["Ciaran", "Zofia"] if task == "aggregation" else ["Ciaran"], stale=("Mikkel",) if task == "cascade" else ())
    judged = judge.judge(question, "Ciaran and Zofia.")
    assert (judged.verdict.passed, judged.attempts) == (True, 2)
    first, repair = (r.body["messages"] for r in server.requests)
    assert repair[: len(first)] == first
    assert repair[-2]["role"] == "assistant"
    assert repair[-1]["content"].startswith("That reply could not be used: ")


def test_a_reply_still_unusable_after_the_repair_raises_judge_error(make_judge: Rig) -> None:
    server, judge = make_judge(MemeJudgePolicy(flaw="missing_field", flawed_kinds=("deletion",)))
    with pytest.raises(JudgeError, match=r'no usable MEME verdict after 2 attempts \("correct" is missing .*last reply'):
        judge.judge(probe("deletion", facts=[DELETED_FACT], stale=("Quillon",)), "I don't have that.")
    assert server.count(kind="meme_judge") == 2
    assert judge.judge(probe("cascade", ["Ciaran"], stale=("Zofia",)), "Ciaran.").verdict.passed  # other kinds unaffected


def test_endpoint_failures_become_judge_errors(make_judge: Rig) -> None:
    _, judge = make_judge(faults=(Fault("status", status=400, permanent=True, only="meme_judge", text="model not found"),))
    with pytest.raises(JudgeError, match="HTTP 400: model not found"):
        judge.judge(probe("cascade", ["Ciaran"], stale=("Zofia",)), "Ciaran.")


# -- the scorer --------------------------------------------------------------------------------


def cases() -> list[LensCase]:
    """The probes of the first bundled MEME episode."""
    scopes = load_dataset(bundled_suite_paths("meme")[0]).scopes[:1]
    return build_cases(["bm25"], scopes, [parse_budget("16k")])


def test_scorer_with_the_llm_judge_records_a_failure_and_no_metric(make_judge: Rig) -> None:
    _, judge = make_judge(MemeJudgePolicy(flaw="prose", flawed_kinds=("cascade",)))
    scorer = MemeScorer(judge)
    outputs = {case.question.question_id: scorer.score(case, case.question.ground_truth.canonical_answer, {}) for case in cases()}
    failed = {qid for qid, out in outputs.items() if out.failures}
    assert failed == {qid for qid in outputs if qid.endswith("_after") and "_cascade" in qid}
    for qid in failed:
        out = outputs[qid]
        assert out.metrics == {}
        assert out.failures[0].startswith("meme_pass: no usable MEME verdict after 2 attempts (the reply is not a JSON object)")
        assert out.details["judge"] == "llm" and "error" in out.details
    by_id = {case.question.question_id: case.question for case in cases()}
    for qid, out in outputs.items():
        if qid not in failed:
            question = by_id[qid]
            assert out.metrics["meme_pass"] == float(judge_probe(question, question.ground_truth.canonical_answer).passed)
            assert out.details["judge"] == ("mechanical" if question.question_type == "exact_recall" else "llm")


def test_scorer_without_a_judge_stays_mechanical() -> None:
    scorer = MemeScorer()
    for case in cases():
        out = scorer.score(case, "I am not sure.", {})
        assert out.details["judge"] == "mechanical"
        assert out.metrics["meme_pass"] == float(judge_probe(case.question, "I am not sure.").passed)


def test_the_models_verdict_counts_even_where_the_mechanical_rules_disagree(make_judge: Rig) -> None:
    def lenient(request: ChatRequest) -> Reply:
        return Reply(content='{"correct": true, "reason": "Close enough."}')

    server, judge = make_judge()
    server.policy = LensPolicy(meme_judge=lenient)
    question, answer = probe("cascade", ["Ciaran"], stale=("Zofia",)), "Zofia, or maybe Ciaran."
    assert not judge_probe(question, answer).passed
    verdict = judge.judge(question, answer).verdict
    assert (verdict.passed, verdict.reason) == (True, "Close enough.")
