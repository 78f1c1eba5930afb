"""Tier-1 mechanical metrics (SPEC §5), computed per question from what actually happened."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from pytest_lens.citations import split_sentences
from pytest_lens.datasets.models import KeyFact
from pytest_lens.text import normalize

__all__ = ["FACTS_NOT_PRINTED", "MECHANICAL_METRICS", "NO_SIGNAL_LABELS", "AnswerEvidence", "fact_matched", "mechanical_metrics"]

MECHANICAL_METRICS = ("evidence_grounding", "evidence_coverage", "citation_coverage", "budget_compliance", "fact_recall")

# Why a metric is absent when the data cannot support it on a question (recorded on the result, shown in the summary),
# as opposed to an answer that merely gave it nothing to measure.
#: ``fact_recall`` when the question has key facts but none is printed where an answer could quote it.
FACTS_NOT_PRINTED = (
    "no key fact (nor any alias) is printed in the episodes available at the checkpoint: matching cannot find "
    "free-text findings; a judge can (--lens-judge)"
)
#: ``signal_precision`` when the scope carries no signal/distractor labels.
NO_SIGNAL_LABELS = "the dataset labels no episode as signal or distractor (episode meta, or a NAME.labels.json sidecar)"


@dataclass(frozen=True)
class AnswerEvidence:
    """The facts of one answered question that the mechanical metrics need.

    ``cited`` and ``returned`` are stored ref ids (aliases already resolved);
    ``known`` are the refs that exist at the checkpoint (ingested episodes and
    the adapter's synthetic refs); ``required`` only those available by then.
    """

    answer: str
    cited: Sequence[str]
    returned: Collection[str]
    known: Collection[str]
    required: Sequence[str]
    key_facts: Sequence[KeyFact]
    violations: int

    @property
    def grounded(self) -> set[str]:
        """Cited refs that exist at the checkpoint and were returned to the agent."""
        return {ref for ref in self.cited if ref in self.known and ref in self.returned}


def _same(ref: str) -> str:
    return ref


def mechanical_metrics(evidence: AnswerEvidence, resolve: Callable[[str], str] = _same) -> dict[str, float]:
    """The tier-1 metrics; a metric with nothing to measure (no required refs, no key facts) is absent.

    ``resolve`` maps ids as cited in the answer text to stored ids (for aliased runs). ``key_facts``
    should hold only the facts an answer could match (see :data:`FACTS_NOT_PRINTED`).
    """
    grounded = evidence.grounded
    metrics: dict[str, float] = {
        # Nothing cited is not "no hallucination": an uncited answer is ungrounded.
        "evidence_grounding": len(grounded) / len(evidence.cited) if evidence.cited else 0.0,
        "budget_compliance": 0.0 if evidence.violations else 1.0,
    }
    if evidence.required:
        required = set(evidence.required)
        metrics["evidence_coverage"] = len(required & grounded) / len(required)
    sentences = split_sentences(evidence.answer)
    if sentences:
        supported = sum(1 for s in sentences if any(resolve(c) in grounded for c in s.citations))
        metrics["citation_coverage"] = supported / len(sentences)
    else:
        metrics["citation_coverage"] = 0.0
    if evidence.key_facts:
        answer = normalize(evidence.answer)
        metrics["fact_recall"] = sum(fact_matched(fact, answer) for fact in evidence.key_facts) / len(evidence.key_facts)
    return metrics


def fact_matched(fact: KeyFact, normalized_answer: str) -> bool:
    """A key fact counts when its text or any alias appears in the answer (normalised substring)."""
    return any(pattern and normalize(pattern) in normalized_answer for pattern in fact.patterns)
