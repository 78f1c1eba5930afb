"""The terminal summary as plain lines; the pytest hook only prints them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pytest_lens.results import AdapterSummary

__all__ = ["METRIC_LABELS", "LensReport", "ReportSection", "Verdict", "format_table"]

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
}


@dataclass(frozen=True)
class Verdict:
    """The run's gate outcome: exit status and one line per reason."""

    exit_code: int
    reasons: tuple[str, ...] = ()

    @classmethod
    def from_summaries(cls, summaries: dict[str, AdapterSummary], incomplete: Sequence[str] = ()) -> Verdict:
        """Failing when any adapter is gated or results are missing."""
        reasons = [f"{key}: hard gate {', '.join(s.gate_reasons)}" for key, s in summaries.items() if s.gated]
        reasons.extend(incomplete)
        return cls(1 if reasons else 0, tuple(reasons))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> list[str]:
    """Space-aligned columns; ``right`` marks right-aligned (numeric) columns."""
    right = right or [False] * len(headers)
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in zip(cells, widths, right, strict=False)]
        return "  ".join(parts).rstrip()

    return [line(headers), *(line(row) for row in rows)]


class ReportSection(Protocol):
    """An extra block of the summary (e.g. a sibling suite's tables), printed after LENS's tables."""

    @property
    def lines(self) -> list[str]:
        """The block, line by line."""
        ...


@dataclass
class LensReport:
    """Everything the LENS summary prints."""

    summaries: dict[str, AdapterSummary]
    header: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    verdict: Verdict = field(default_factory=lambda: Verdict(0))
    max_warnings: int = 12
    sections: Sequence[ReportSection] = ()

    @property
    def lines(self) -> list[str]:
        """The summary, line by line."""
        out = list(self.header)
        if not self.summaries:
            if not self.sections:
                out.append("no LENS results were recorded")
        else:
            out.append("")
            out.extend(self._adapter_table())
            out.append("")
            out.append("composite by question type:")
            out.extend(self._type_table())
        for section in self.sections:
            out.append("")
            out.extend(section.lines)
        if self.warnings:
            out.append("")
            out.append(f"dataset defects ({len(self.warnings)}; affected questions are flagged and scored on the evidence available):")
            out.extend(f"  {warning}" for warning in self.warnings[: self.max_warnings])
            if len(self.warnings) > self.max_warnings:
                out.append(f"  ... and {len(self.warnings) - self.max_warnings} more (see `lens validate`)")
        out.append("")
        if self.verdict.exit_code:
            out.extend(f"LENS verdict: FAIL - {reason}" for reason in self.verdict.reasons)
        else:
            out.append("LENS verdict: PASS")
        return out

    def _metric_names(self) -> list[str]:
        present = {name for s in self.summaries.values() for name in s.metrics}
        ordered = [name for name in METRIC_LABELS if name in present]
        return ordered + sorted(present - set(ordered))

    def _adapter_table(self) -> list[str]:
        metrics = self._metric_names()
        headers = ["adapter", "n", "composite", *(METRIC_LABELS.get(m, m) for m in metrics), "res.tok/q", "calls/q", "faults", "gate"]
        rows = []
        for key, s in self.summaries.items():
            gate = "FAIL " + "; ".join(s.gate_reasons) if s.gated else "pass"
            rows.append(
                [
                    key,
                    f"{s.n_questions} ({s.missing} missing)" if s.missing else str(s.n_questions),
                    f"{s.composite:.3f}",
                    *(f"{s.metrics[m]:.3f}" if m in s.metrics else "-" for m in metrics),
                    f"{s.result_tokens_mean:,.0f}",
                    f"{s.tool_calls_mean:.1f}",
                    str(s.faults),
                    gate,
                ]
            )
        right = [False, True, True, *([True] * len(metrics)), True, True, True, False]
        return format_table(headers, rows, right)

    def _type_table(self) -> list[str]:
        types = sorted({qtype for s in self.summaries.values() for qtype in s.by_type})
        keys = list(self.summaries)
        rows = []
        for qtype in types:
            counts = {s.by_type[qtype].n for s in self.summaries.values() if qtype in s.by_type}
            rows.append(
                [
                    qtype,
                    "/".join(str(c) for c in sorted(counts)),
                    *(f"{self.summaries[k].by_type[qtype].composite:.3f}" if qtype in self.summaries[k].by_type else "-" for k in keys),
                ]
            )
        return format_table(["type", "n", *keys], rows, [False, True, *([True] * len(keys))])
