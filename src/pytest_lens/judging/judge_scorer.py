"""Judge-based metrics (tiers 2 and 3) through the engine's :class:`~pytest_lens.scoring.scorer.QuestionScorer` seam.

Per question:

- ``answer_quality``: pairwise per key fact against the canonical answer (mean of win 1 / tie 0.5 / loss 0);
- ``action_quality``: ``answer_quality`` of ``action_recommendation`` questions;
- ``insight_depth`` and ``reasoning_quality``: one judgment each of the whole answer;
- ``naive_baseline_advantage``: pairwise per key fact against the naive baseline's answer (0.5 = parity).

Per (adapter, budget) group, :func:`longitudinal_advantage` = mean ``answer_quality`` of
synthesis questions minus that of control questions.

A metric whose judgments did not all succeed is absent for that question and the
failures are listed (the report counts them and flags the run past a threshold):
a failed judgment is never scored as a TIE. A metric with nothing to judge (no key
facts) is absent too.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_lens.citations import parse_citations
from pytest_lens.judging.baseline import BaselineError, NaiveBaseline
from pytest_lens.judging.judge import (
    INSIGHT,
    REASONING,
    CitationEvidence,
    Comparison,
    Criterion,
    Judge,
    JudgeError,
    Judgment,
    judged_at_once,
)
from pytest_lens.scoring.scorer import ScorerOutput

if TYPE_CHECKING:
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.results import QuestionResult

__all__ = ["JUDGE_METRICS", "JudgeScorer", "longitudinal_advantage"]

JUDGE_METRICS = (
    "answer_quality",
    "insight_depth",
    "reasoning_quality",
    "action_quality",
    "naive_baseline_advantage",
    "longitudinal_advantage",
)


@dataclass(frozen=True)
class _Task:
    metric: str
    index: int
    comparison: Comparison


class JudgeScorer:
    """Scores answers with a :class:`~pytest_lens.judging.judge.Judge` (and a naive baseline for tier 3)."""

    name = "judge"

    def __init__(
        self,
        judge: Judge,
        baseline: NaiveBaseline | None = None,
        *,
        concurrency: int = 4,
        check: Judge | None = None,
        checked: Collection[tuple[str, str, str, str, int]] = (),
    ) -> None:
        self.judge = judge
        self.baseline = baseline
        #: ``--lens-judge-check``: the second judge, and the answers (item keys) whose judgments it grades again.
        self.check = check
        self.checked = frozenset(checked)
        self.concurrency = max(1, concurrency)
        self._gates_lock = threading.Lock()
        self._baseline_gates: dict[tuple[str, str, int], threading.Lock] = {}

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Judge ``answer``; metrics whose judgments failed stay absent and the failures are returned."""
        question = case.question
        facts = [Criterion.fact(fact) for fact in question.ground_truth.key_facts]
        canonical = question.ground_truth.canonical_answer
        base_key = f"{case.scope.scope_id}/{question.question_id}"
        cited = len(parse_citations(answer))
        grounded = round(metrics.get("evidence_grounding", 0.0) * cited)
        evidence = CitationEvidence(cited=cited, grounded=grounded)

        def task(metric: str, index: int, criterion: Criterion, reference: str) -> _Task:
            key = f"{base_key}/{metric}/{index}"
            return _Task(metric, index, Comparison(question.prompt, criterion, answer, reference, key, evidence))

        tasks = [task("answer_quality", i, fact, canonical) for i, fact in enumerate(facts)]
        tasks.append(task("insight_depth", 0, INSIGHT, canonical))
        tasks.append(task("reasoning_quality", 0, REASONING, canonical))
        failures: list[str] = []
        details: dict[str, Any] = {"judge": self.judge.name}
        if facts and self.baseline is not None:
            try:
                # Questions sharing a baseline answer (other budgets, repetitions) ask one after the other, so
                # the baseline's memo answers the later ones exactly as in a serial run, even when answered concurrently.
                with self._baseline_gate(case):
                    baseline = self.baseline.answer(case)
            except BaselineError as exc:
                failures.append(f"naive_baseline_advantage: the naive baseline could not answer: {exc}")
            else:
                details["baseline"] = {
                    "answerer": self.baseline.name,
                    "answer": baseline.text,
                    "episodes": baseline.episodes,
                    "tokens": baseline.tokens,
                    "first_position": baseline.first_position,
                }
                if baseline.trimmed:
                    details["baseline"]["trimmed"] = True
                tasks.extend(task("naive_baseline_advantage", i, fact, baseline.text) for i, fact in enumerate(facts))

        outcomes = self._run(tasks)
        judgments: list[dict[str, Any]] = []
        scores: dict[str, list[float]] = {}
        failed: set[str] = set()
        for item, outcome in zip(tasks, outcomes, strict=True):
            entry: dict[str, Any] = {"metric": item.metric, "criterion": item.comparison.criterion.text}
            if isinstance(outcome, JudgeError):
                failed.add(item.metric)
                what = (
                    f"fact {item.index + 1} ({item.comparison.criterion.text!r})"
                    if item.comparison.criterion.kind == "fact"
                    else "judgment"
                )
                failures.append(f"{item.metric}: {what}: {outcome}")
                entry["error"] = str(outcome)
            else:
                scores.setdefault(item.metric, []).append(outcome.score)
                entry.update(winner=outcome.winner, score=outcome.score, candidate_position=outcome.candidate_position, raw=outcome.raw)
                if outcome.attempts > 1:
                    entry["attempts"] = outcome.attempts
            judgments.append(entry)
        details["judgments"] = judgments
        if self.check is not None and case.item_key in self.checked:
            details["judge_check"] = self._check(tasks, outcomes)
        if failures:
            details["failed_judgments"] = sum(1 for entry in judgments if "error" in entry)

        results = {metric: sum(values) / len(values) for metric, values in scores.items() if metric not in failed}
        if question.question_type == "action_recommendation" and "answer_quality" in results:
            results["action_quality"] = results["answer_quality"]
        return ScorerOutput(metrics=results, details=details, failures=failures)

    def _check(self, tasks: Sequence[_Task], outcomes: Sequence[Judgment | JudgeError]) -> list[dict[str, Any]]:
        """The second judge's verdicts on the comparisons the first judge decided, side by side with the first's."""
        assert self.check is not None
        decided = [(item, outcome) for item, outcome in zip(tasks, outcomes, strict=True) if isinstance(outcome, Judgment)]
        again = self._run([item for item, _ in decided], self.check)
        pairs: list[dict[str, Any]] = []
        for (item, first), second in zip(decided, again, strict=True):
            entry: dict[str, Any] = {"metric": item.metric, "index": item.index, "first": first.winner}
            if first.candidate_position is not None:
                entry["first_position"] = first.candidate_position
            if isinstance(second, JudgeError):
                entry["error"] = str(second)
            else:
                entry["second"] = second.winner
                if second.candidate_position is not None:
                    entry["second_position"] = second.candidate_position
            pairs.append(entry)
        return pairs

    def _baseline_gate(self, case: LensCase) -> threading.Lock:
        key = (case.scope.scope_id, case.question.question_id, case.checkpoint)
        with self._gates_lock:
            return self._baseline_gates.setdefault(key, threading.Lock())

    def _run(self, tasks: Sequence[_Task], judge: Judge | None = None) -> list[Judgment | JudgeError]:
        chosen = judge or self.judge

        def one(item: _Task) -> Judgment | JudgeError:
            try:
                return chosen.compare(item.comparison)
            except JudgeError as exc:
                return exc

        return judged_at_once(one, tasks, concurrency=self.concurrency, name="lens-judge")


def longitudinal_advantage(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Mean ``answer_quality`` of synthesis questions minus that of control questions (absent unless both exist)."""
    synthesis = [r.metrics["answer_quality"] for r in results if r.category == "synthesis" and "answer_quality" in r.metrics]
    control = [r.metrics["answer_quality"] for r in results if r.category == "control" and "answer_quality" in r.metrics]
    if not synthesis or not control:
        return {}
    return {"longitudinal_advantage": sum(synthesis) / len(synthesis) - sum(control) / len(control)}
