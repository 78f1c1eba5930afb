"""``--lens-scoring=v2``: LENS V2's metrics and weights, without the reference V2 harness's defects.

Per question:

- ``fact_recall_judged``: the share of key facts the judge says the answer states or
  implies, one strict YES/NO verdict per fact (:func:`~pytest_lens.judging.fact_judge.judge_fact`).
  It is recall, and named so (the reference calls it "Fact F1" with precision set to
  recall). A fact whose verdict fails makes the metric absent for the question and is
  counted as a judge failure, never read as "absent". A question with no key facts has
  no such metric (the reference scores it 1.0).
- ``evidence_support``: the judge's 0-4 rating of how well the cited episodes' texts
  support the answer's claims, divided by 4; 0 when nothing with a text is cited. Absent
  under the offline judge, which cannot read support.
- ``citation_validity``: cited refs that resolve (an episode ingested by the checkpoint,
  or a synthetic ref the adapter declared) over cited refs; 0 when nothing is cited
  (the reference gives 1.0 whenever it cannot check).

:data:`V2_WEIGHTS` are V2's: 0.5 fact recall, 0.3 evidence support, 0.2 citation validity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_lens.citations import parse_citations
from pytest_lens.judging.fact_judge import FactVerdict, judge_fact, rate_support
from pytest_lens.judging.judge import Criterion, Judge, JudgeError, judged_at_once
from pytest_lens.scoring.composite import SCORING_PRESETS, V2_WEIGHTS, preset_weights
from pytest_lens.scoring.scorer import CitedSources, ScorerOutput

if TYPE_CHECKING:
    from pytest_lens.records.cases import LensCase

__all__ = ["SCORING_PRESETS", "V2_METRICS", "V2_WEIGHTS", "V2Scorer", "preset_weights"]

V2_METRICS = ("fact_recall_judged", "evidence_support", "citation_validity")


class V2Scorer:
    """Scores ``fact_recall_judged``, ``evidence_support`` (with a judge) and ``citation_validity`` (always)."""

    name = "v2"
    #: The engine passes this scorer the answer's resolved citations (``sources=``).
    reads_citations = True

    def __init__(self, judge: Judge | None, *, concurrency: int = 4) -> None:
        self.judge = judge
        self.concurrency = max(1, concurrency)

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float], sources: CitedSources | None = None) -> ScorerOutput:
        """The V2 metrics of ``answer``; a metric whose judgment failed stays absent and the failure is returned."""
        if sources is None:  # called without the engine's view of the citations: read them from the text
            cited = parse_citations(answer)
            sources = CitedSources(cited, [ref for ref in cited if case.scope.position(ref) is not None])
        results: dict[str, float] = {
            "citation_validity": len(sources.valid) / len(sources.cited) if sources.cited else 0.0,
        }
        details: dict[str, Any] = {"cited": len(sources.cited), "valid": len(sources.valid)}
        failures: list[str] = []
        judge = self.judge
        if judge is None:
            return ScorerOutput(metrics=results, details=details)
        details["judge"] = judge.name
        question = case.question
        facts = [Criterion.fact(fact) for fact in question.ground_truth.key_facts]
        verdicts = self._facts(judge, question.prompt, facts, answer)
        entries: list[dict[str, Any]] = []
        for index, (fact, verdict) in enumerate(zip(facts, verdicts, strict=True), start=1):
            if isinstance(verdict, JudgeError):
                failures.append(f"fact_recall_judged: fact {index} ({fact.text!r}): {verdict}")
                entries.append({"fact": fact.text, "error": str(verdict)})
            else:
                entry: dict[str, Any] = {"fact": fact.text, "present": verdict.present, "raw": verdict.raw}
                if verdict.attempts > 1:
                    entry["attempts"] = verdict.attempts
                entries.append(entry)
        if facts:
            details["facts"] = entries
            present = [v.present for v in verdicts if isinstance(v, FactVerdict)]
            if len(present) == len(facts):
                results["fact_recall_judged"] = sum(present) / len(facts)
        try:
            texts = {ref: sources.texts[ref] for ref in sources.valid if ref in sources.texts}
            rating = rate_support(judge, question.prompt, answer, texts)
        except JudgeError as exc:
            failures.append(f"evidence_support: {exc}")
            details["support"] = {"error": str(exc)}
        else:
            if rating is not None:
                results["evidence_support"] = rating.score
                details["support"] = {"rating": rating.rating, "raw": rating.raw, "attempts": rating.attempts}
        if failures:
            details["failed_judgments"] = len(failures)
        return ScorerOutput(metrics=results, details=details, failures=failures)

    def _facts(self, judge: Judge, question: str, facts: Sequence[Criterion], answer: str) -> list[FactVerdict | JudgeError]:
        def one(fact: Criterion) -> FactVerdict | JudgeError:
            try:
                return judge_fact(judge, question, fact, answer)
            except JudgeError as exc:
                return exc

        # In copies of this context: the requests count for the question (they did not) and carry its repetition.
        return judged_at_once(one, facts, concurrency=self.concurrency, name="lens-v2-judge")
