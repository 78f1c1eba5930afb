"""QuestionResults built from metrics alone, for the analysis tests."""

from __future__ import annotations

from pytest_lens.records.results import AdapterFault, QuestionResult
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, composite


def result(
    question_id: str,
    metrics: dict[str, float],
    *,
    adapter: str = "bm25",
    scope_id: str = "s1",
    budget: str = "16k",
    question_type: str = "longitudinal",
    failed: bool = False,
) -> QuestionResult:
    """One scored question with the composite the engine would give it."""
    score = composite(metrics, DEFAULT_WEIGHTS, DEFAULT_GATES)
    return QuestionResult(
        adapter=adapter,
        scope_id=scope_id,
        checkpoint=10,
        question_id=question_id,
        question_type=question_type,
        category="synthesis",
        budget=budget,
        agent="offline",
        prompt="?",
        faults=[AdapterFault(adapter=adapter, method="search", kind="exception", message="boom")] if failed else [],
        metrics=metrics,
        composite=round(score.value, 6),
        gated=score.gated,
    )


def tier1(grounding: float, coverage: float, citation: float = 1.0, budget: float = 1.0) -> dict[str, float]:
    """The mechanical metrics of one question."""
    return {"evidence_grounding": grounding, "evidence_coverage": coverage, "citation_coverage": citation, "budget_compliance": budget}
