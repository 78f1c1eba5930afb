"""The LongMemEval suite (imported): a mechanical stand-in for its GPT-4o judge.

LongMemEval judges answers with GPT-4o and type-specific prompts. Offline, ``lme_answer`` is 1 when the
gold answer appears in the answer (normalised substring, MemoryAgentBench style) and, for abstention
questions (``_abs`` ids), when the answer says it does not know. It is a proxy, labelled as such.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_lens.cases import LensCase
from pytest_lens.engine import QuestionScorer, ScorerOutput
from pytest_lens.suites.answers import substring_exact_match
from pytest_lens.suites.base import Suite, plain_type_summaries
from pytest_lens.suites.meme.tasks import expresses_uncertainty

__all__ = ["LONGMEMEVAL_SUITE", "LongMemEvalScorer"]


class LongMemEvalScorer:
    """``lme_answer``: gold answer present (or uncertainty, for abstention questions)."""

    name = "longmemeval"

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Score ``answer`` against the question's gold answer."""
        question = case.question
        if question.meta.get("abstention"):
            value = float(expresses_uncertainty(answer))
        else:
            golds = list(question.answers) or [question.ground_truth.canonical_answer]
            value = substring_exact_match(answer, golds)
        return ScorerOutput(metrics={"lme_answer": value}, details={"judge": "mechanical proxy for the GPT-4o judge"})


LONGMEMEVAL_SUITE = Suite(
    name="longmemeval",
    title="LongMemEval: long-term interactive memory (imported)",
    headline="score = gold answer in the answer (abstention: uncertainty expressed); a mechanical proxy for the GPT-4o judge",
    question_weights={"lme_answer": 1.0},
    summary_weights={"lme_answer": 1.0},
    make_scorers=lambda: (LongMemEvalScorer(),),
    type_summaries=plain_type_summaries({"lme_answer": 1.0}),
    columns=(
        ("lme_answer", "answer"),
        ("evidence_coverage", "ev.coverage"),
        ("evidence_grounding", "grounding"),
        ("budget_compliance", "budget"),
    ),
)

_: QuestionScorer = LongMemEvalScorer()
