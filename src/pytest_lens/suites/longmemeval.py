"""The LongMemEval suite (imported): its LLM judge under ``--lens-judge=llm``, a mechanical proxy otherwise.

LongMemEval judges answers with GPT-4o and a prompt per question type. With ``--lens-judge=llm`` the
run's judge model does the same (:class:`LongMemEvalLLMJudge`): one request per answer at temperature
0, the criteria written from LongMemEval's protocol (the gold answer contained, or equivalent; temporal
reasoning tolerates off-by-one day counts; knowledge updates pass when the updated answer is given,
whatever earlier values are mentioned; preference questions are checked against their rubric; abstention
questions pass when the answer recognises the question cannot be answered), replying with a JSON verdict
(LongMemEval's judge answers yes or no; JSON lets the reply be checked and repaired).

Offline, ``lme_answer`` is 1 when the gold answer appears in the answer (normalised substring,
MemoryAgentBench style) and, for abstention questions (``_abs`` ids), when the answer says it does not
know. It is a proxy, labelled as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytest_lens.judging.judge import JudgeError
from pytest_lens.records.cases import LensCase
from pytest_lens.scoring.scorer import QuestionScorer, ScorerOutput
from pytest_lens.suites.answers import strip_citations, substring_exact_match
from pytest_lens.suites.base import Suite, SuiteJudge, SuiteJudging, plain_type_summaries
from pytest_lens.suites.meme.tasks import expresses_uncertainty
from pytest_lens.suites.verdicts import VERDICT_FORMAT, ask_for_verdict, json_object, read_verdict

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Question
    from pytest_lens.llm.client import ChatClient

__all__ = ["JUDGE_PREAMBLE", "LONGMEMEVAL_SUITE", "LongMemEvalLLMJudge", "LongMemEvalScorer", "judge_prompt"]

#: The first line of every LongMemEval judge prompt (test servers recognise the request by it).
JUDGE_PREAMBLE = "You are grading a chat assistant's answer in LongMemEval, a benchmark of long-term interactive memory."

_CONTAINS = (
    "The answer is correct if it contains the correct answer, or something equivalent to it, or all the intermediate "
    "steps that lead to it. It is incorrect if it gives only part of the information the correct answer requires, or "
    "a different answer."
)
#: Criteria per question type (LongMemEval's type names, underscored); others get :data:`_CONTAINS`.
_CRITERIA: dict[str, str] = {
    "temporal_reasoning": _CONTAINS
    + " Do not penalise off-by-one errors in a count of days, weeks or months: answering 19 days when the correct "
    "answer is 18 is still correct.",
    "knowledge_update": _CONTAINS
    + " When the answer mentions earlier information together with the updated one, it is correct as long as the "
    "updated answer is the correct answer.",
    "single_session_preference": (
        "The correct answer below is a rubric for a personalised reply. The answer is correct if it recalls and uses the "
        "user's personal information correctly as the rubric describes; it need not cover every point of the rubric."
    ),
}
_ABSTENTION = (
    "This question cannot be answered from the conversation history; the explanation says why. The answer is correct "
    "if it recognises that the question cannot be answered: it may say the information is missing or incomplete, or "
    "that related information was given but not what was asked. It is incorrect if it answers as if it knew."
)


def judge_prompt(question: Question, answer: str) -> str:
    """The judge prompt for ``answer`` (citations removed) to an imported LongMemEval ``question``."""
    abstention = bool(question.meta.get("abstention"))
    # The prompt keeps the question date the importer appended: temporal questions are judged relative to it.
    lines = [JUDGE_PREAMBLE, "", f"Question type: {question.question_type.replace('_', '-')}", f"Question: {question.prompt}"]
    gold = " ".join(question.ground_truth.canonical_answer.split())
    lines.append(f"{'Explanation' if abstention else 'Correct answer'}: {gold}")
    shown = " ".join(strip_citations(answer).split()) or "(empty answer)"
    criteria = _ABSTENTION if abstention else _CRITERIA.get(question.question_type, _CONTAINS)
    lines += ["", "The assistant's answer:", shown, "", criteria, "", f"Reply with ONLY a JSON object, no other text: {VERDICT_FORMAT}"]
    return "\n".join(lines)


class LongMemEvalLLMJudge:
    """LongMemEval's judging protocol through the run's judge model (see the module docstring)."""

    name = "llm"

    def __init__(self, client: ChatClient, *, repairs: int = 1) -> None:
        self.client = client
        self.repairs = repairs
        self.description = f"llm ({client.description}; LongMemEval per-type criteria, JSON verdicts at temperature 0)"

    def judge(self, question: Question, answer: str) -> tuple[bool, str, str, int]:
        """``(correct, reason, raw reply, attempts)``; :class:`JudgeError` when no usable verdict could be had."""
        asked = ask_for_verdict(
            self.client,
            judge_prompt(question, answer),
            lambda raw: read_verdict(json_object(raw)),
            repairs=self.repairs,
            subject="LongMemEval verdict",
        )
        correct, reason = asked.verdict
        return correct, reason, asked.raw, asked.attempts


class LongMemEvalScorer:
    """``lme_answer``: judged correct by the LLM judge when given, else gold answer present (or uncertainty, for abstention)."""

    name = "longmemeval"

    def __init__(self, judge: LongMemEvalLLMJudge | None = None) -> None:
        self.judge = judge

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Score ``answer`` against the question's gold answer."""
        question = case.question
        if self.judge is not None:
            try:
                correct, reason, raw, attempts = self.judge.judge(question, answer)
            except JudgeError as exc:
                return ScorerOutput(details={"judge": "llm", "error": str(exc)}, failures=[f"lme_answer: {exc}"])
            details = {"judge": "llm", "correct": correct, "reason": reason, "raw": raw, "attempts": attempts}
            return ScorerOutput(metrics={"lme_answer": float(correct)}, details=details)
        if question.meta.get("abstention"):
            value = float(expresses_uncertainty(answer))
        else:
            golds = list(question.answers) or [question.ground_truth.canonical_answer]
            value = substring_exact_match(answer, golds)
        return ScorerOutput(metrics={"lme_answer": value}, details={"judge": "mechanical proxy for the GPT-4o judge"})


def _llm_judging(client: ChatClient) -> SuiteJudging:
    judge = LongMemEvalLLMJudge(client)
    return SuiteJudging(SuiteJudge(judge.name, judge.description), (LongMemEvalScorer(judge),))


LONGMEMEVAL_SUITE = Suite(
    name="longmemeval",
    title="LongMemEval: long-term interactive memory (imported)",
    score_label="answer",
    headline="answer = share of answers judged correct: by the judge model with LongMemEval's per-type criteria under "
    "--lens-judge=llm, else by a mechanical proxy (gold answer in the answer; abstention: uncertainty expressed)",
    question_weights={"lme_answer": 1.0},
    summary_weights={"lme_answer": 1.0},
    make_scorers=lambda: (LongMemEvalScorer(),),
    type_summaries=plain_type_summaries({"lme_answer": 1.0}),
    columns=(
        ("evidence_coverage", "ev.coverage"),
        ("evidence_grounding", "grounding"),
        ("budget_compliance", "budget"),
    ),
    llm_judging=_llm_judging,
)

_: QuestionScorer = LongMemEvalScorer()
