"""Numbers, estimates and tables as plain text.

Shared by the terminal summary, the statistics tables, the gates' explanations and the sibling suites' sections.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_lens.records.statistics import Estimate
from pytest_lens.scoring.retrieval import EVIDENCE_METRICS, RETRIEVAL_METRICS

__all__ = ["DETAIL_METRICS", "METRIC_LABELS", "format_delta", "format_estimate", "format_p", "format_table", "headline_label", "signed"]

#: Column headings for metrics, in display order; unknown metrics follow under their own names.
METRIC_LABELS: dict[str, str] = {
    "evidence_grounding": "grounding",
    "evidence_coverage": "ev.coverage",
    "citation_coverage": "cit.coverage",
    "budget_compliance": "budget",
    "fact_recall": "fact_recall",
    "answer_quality": "answer_q",
    "insight_depth": "insight",
    "reasoning_quality": "reasoning",
    "naive_baseline_advantage": "vs_naive",
    "longitudinal_advantage": "long.adv",
    "action_quality": "action_q",
    # Retrieval and evidence metrics keep their full names: they say what they measure.
    **{name: name for name in (*RETRIEVAL_METRICS, *EVIDENCE_METRICS)},
}

#: Metrics shown with their CIs in the metric table only, not as columns of the adapter table (it would not fit).
DETAIL_METRICS = frozenset((*RETRIEVAL_METRICS, *EVIDENCE_METRICS))


def headline_label(name: str) -> str:
    """``retrieval score`` for ``retrieval_score``; ``composite`` stays."""
    return name.replace("_", " ")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> list[str]:
    """Space-aligned columns; ``right`` marks right-aligned (numeric) columns."""
    right = right or [False] * len(headers)
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in zip(cells, widths, right, strict=False)]
        return "  ".join(parts).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def format_estimate(estimate: Estimate, digits: int = 3) -> str:
    """``0.813 [0.790, 0.836]``, or the bare value when no interval exists (fewer than two questions)."""
    value = f"{estimate.value:.{digits}f}"
    if estimate.low is None or estimate.high is None:
        return value
    return f"{value} [{estimate.low:.{digits}f}, {estimate.high:.{digits}f}]"


def format_p(p: float) -> str:
    """``0.016``; ``9.8e-04`` below 0.001."""
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def signed(value: float) -> str:
    """``+0.012``: a difference with its sign, three decimals."""
    return f"{value:+.3f}"


def format_delta(estimate: Estimate) -> str:
    """``+0.012 [-0.004, +0.030]``: a signed difference with its CI when it has one."""
    text = signed(estimate.value)
    if estimate.low is None or estimate.high is None:
        return text
    return f"{text} [{signed(estimate.low)}, {signed(estimate.high)}]"
