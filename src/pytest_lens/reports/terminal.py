"""The terminal summary as plain lines; the pytest hook only prints them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pytest_lens.analysis.format import DETAIL_METRICS, METRIC_LABELS, format_table, headline_label
from pytest_lens.records.results import AdapterSummary

if TYPE_CHECKING:
    from pytest_lens.records.statistics import RunStatistics

__all__ = ["LensReport", "ReportSection", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The run's gate outcome: exit status and one line per reason."""

    exit_code: int
    reasons: tuple[str, ...] = ()
    #: What the verdict rests on that a reader must know, printed on the verdict line (an unlike baseline accepted).
    notes: tuple[str, ...] = ()

    @classmethod
    def from_summaries(cls, summaries: dict[str, AdapterSummary], incomplete: Sequence[str] = ()) -> Verdict:
        """Failing when any adapter is gated (controls never are) or results are missing."""
        reasons = [f"{key}: hard gate {', '.join(s.gate_reasons)}" for key, s in summaries.items() if s.gated and s.control is None]
        reasons.extend(incomplete)
        return cls(1 if reasons else 0, tuple(reasons))

    def extended(self, reasons: Iterable[str]) -> Verdict:
        """The verdict with more failure reasons (any reason makes it fail)."""
        merged = (*self.reasons, *reasons)
        return Verdict(1 if merged or self.exit_code else 0, merged, self.notes)

    @property
    def lines(self) -> list[str]:
        """``LENS verdict: PASS`` (with its notes), or one ``LENS verdict: FAIL - reason`` line per reason."""
        notes = f" [{'; '.join(self.notes)}]" if self.notes else ""
        if not self.exit_code:
            return [f"LENS verdict: PASS{notes}"]
        if not self.reasons:
            return [f"LENS verdict: FAIL{notes}"]
        first, *rest = self.reasons
        return [f"LENS verdict: FAIL - {first}{notes}", *(f"LENS verdict: FAIL - {reason}" for reason in rest)]

    def noted(self, notes: Iterable[str]) -> Verdict:
        """The verdict with more notes (they never change the outcome)."""
        return Verdict(self.exit_code, self.reasons, (*self.notes, *notes))


def _count_cell(summary: AdapterSummary) -> str:
    """``8``, or ``7 (1 not measured)``, ``6 (2 missing)``: questions scored, and those that are not."""
    apart = [f"{count} {what}" for count, what in ((summary.not_measured, "not measured"), (summary.missing, "missing")) if count]
    return f"{summary.n_questions} ({', '.join(apart)})" if apart else str(summary.n_questions)


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
    #: Bootstrap CIs; when present, composites are shown with their interval.
    statistics: RunStatistics | None = None
    #: One line per gate (pass or FAIL), printed before the verdict.
    gates: list[str] = field(default_factory=list)
    #: What the adapter table's abbreviations and composite mean (:func:`pytest_lens.reports.legend.legend_lines`).
    legend: list[str] = field(default_factory=list)

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
            out.extend(self._not_comparable_lines())
            out.extend(self._absent_lines())
            out.extend(self.legend)
            out.extend(self._stats_lines())
            out.append("")
            out.append(f"{self._headline_label} by question type:")
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
        if self.gates:
            out.append("")
            out.append("LENS gates:")
            out.extend(f"  {line}" for line in self.gates)
        out.append("")
        out.extend(self.verdict.lines)
        return out

    def _metric_names(self) -> list[str]:
        present = {name for s in self.summaries.values() for name in s.metrics} - DETAIL_METRICS
        ordered = [name for name in METRIC_LABELS if name in present]
        return ordered + sorted(present - set(ordered))

    @property
    def _headline_label(self) -> str:
        names = {s.headline_name for s in self.summaries.values()}
        return headline_label(names.pop()) if len(names) == 1 else "headline"

    def _adapter_table(self) -> list[str]:
        metrics = self._metric_names()
        with_ci = self.statistics is not None
        label = self._headline_label
        heading = f"{label} [{self.statistics.confidence:.0%} CI]" if self.statistics is not None else label
        # The paper's composite stays in view beside another headline.
        composite_labels = sorted({s.composite_label for s in self.summaries.values() if s.headline_name != "composite"})
        composite_heading = [" / ".join(composite_labels)] if composite_labels else []
        headers = ["adapter", "n", heading, *composite_heading, *(METRIC_LABELS.get(m, m) for m in metrics)]
        headers += ["res.tok/q", "calls/q", "faults", "gate"]
        rows = []
        for key, s in self.summaries.items():
            reasons = [*s.gate_reasons, *(["faults"] if s.not_comparable is not None else [])]
            gate = "FAIL " + "; ".join(reasons) if reasons else "pass"
            if s.control is not None:  # shown, never gating
                gate = "control" + (f" (gated: {'; '.join(reasons)})" if reasons else "")
            # A broken adapter's scores stay visible, but flagged: they measure the faults, not the memory.
            flag = " (not comparable)" if s.not_comparable is not None else ""
            rows.append(
                [
                    key,
                    _count_cell(s),
                    (self._composite_cell(key, None) if with_ci else f"{s.headline:.3f}") + flag,
                    *([f"{s.composite:.3f}{flag}"] if composite_heading else []),
                    *(f"{s.metrics[m]:.3f}" if m in s.metrics else "-" for m in metrics),
                    f"{s.result_tokens_mean:,.0f}",
                    f"{s.tool_calls_mean:.1f}",
                    str(s.faults),
                    gate,
                ]
            )
        right = [False, True, True, *([True] * len(composite_heading)), *([True] * len(metrics)), True, True, True, False]
        return format_table(headers, rows, right)

    def _not_comparable_lines(self) -> list[str]:
        """Why an adapter's scores are marked not comparable."""
        return [
            f"not comparable: {key}: {s.not_comparable}; its scores measure a broken adapter, not its memory"
            for key, s in self.summaries.items()
            if s.not_comparable is not None
        ]

    def _absent_lines(self) -> list[str]:
        """Metrics the data could not support, with the reason, instead of a misleading 0.000."""
        found: dict[tuple[str, str], list[str]] = {}
        for key, s in self.summaries.items():
            for metric, reason in s.absent_metrics.items():
                found.setdefault((metric, reason), []).append(key)
        return [f"{metric} ({', '.join(keys)}): {reason}" for (metric, reason), keys in found.items()]

    def _composite_cell(self, key: str, qtype: str | None) -> str:
        """The headline with its CI from :attr:`statistics` (the adapter's, or one question type's)."""
        from pytest_lens.analysis.format import format_estimate

        stats = self.statistics.adapters.get(key) if self.statistics is not None else None
        estimate = None if stats is None else stats.composite if qtype is None else stats.by_type.get(qtype)
        if estimate is not None:
            return format_estimate(estimate)
        summary = self.summaries[key]
        return f"{summary.headline if qtype is None else summary.by_type[qtype].headline:.3f}"

    def _stats_lines(self) -> list[str]:
        """Adapters' own counters (``lens_stats()``), e.g. embedding-cache hits and misses."""
        rows = [(key, s.adapter_stats) for key, s in self.summaries.items() if s.adapter_stats]
        if not rows:
            return []
        return [
            "adapter counters:",
            *(f"  {key}: " + ", ".join(f"{name}={value:,}" for name, value in stats.items()) for key, stats in rows),
        ]

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
                    *(self._composite_cell(k, qtype) if qtype in self.summaries[k].by_type else "-" for k in keys),
                ]
            )
        return format_table(["type", "n", *keys], rows, [False, True, *([True] * len(keys))])
