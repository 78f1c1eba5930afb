"""The conformance summary as plain lines (the pytest hook only prints them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_lens.analysis.format import format_table
from pytest_lens.conformance.latency import ALL_METHODS, DEFAULT_CEILING_S, latency_stats
from pytest_lens.conformance.results import ClauseOutcome

__all__ = ["conformance_lines", "describe_ceilings"]


def describe_ceilings(ceilings: Mapping[str, float], enforce: bool) -> str:
    """``latency ceiling 1,000 ms per call (search 200 ms), advisory``."""
    default = ceilings.get(ALL_METHODS, DEFAULT_CEILING_S)
    specific = ", ".join(f"{method} {seconds * 1000:,.0f} ms" for method, seconds in sorted(ceilings.items()) if method != ALL_METHODS)
    mode = "enforced" if enforce else "advisory"
    return f"latency ceiling p95 {default * 1000:,.0f} ms per call{f' ({specific})' if specific else ''}, {mode}"


def conformance_lines(outcomes: Sequence[ClauseOutcome], ceilings: Mapping[str, float], enforce: bool) -> list[str]:
    """Per adapter: clauses passed, failed and not applicable, examples and time; failures; latency per method."""
    by_adapter: dict[str, list[ClauseOutcome]] = {}
    for outcome in outcomes:
        by_adapter.setdefault(outcome.adapter, []).append(outcome)
    profiles = sorted({o.profile for o in outcomes if o.profile})
    lines = [f"hypothesis profile {', '.join(profiles) or '-'}; {describe_ceilings(ceilings, enforce)}"]
    rows = []
    for adapter, items in by_adapter.items():
        count = {status: sum(o.status == status for o in items) for status in ("passed", "failed", "not_applicable")}
        rows.append(
            [
                adapter,
                str(len(items)),
                str(count["passed"]),
                str(count["failed"]),
                str(count["not_applicable"]),
                f"{sum(o.examples for o in items):,}",
                f"{sum(o.duration_s for o in items):.1f} s",
            ]
        )
    lines.append("")
    lines.extend(format_table(["adapter", "clauses", "passed", "failed", "n/a", "examples", "time"], rows, [False, *([True] * 6)]))
    failed = [o for o in outcomes if o.failed]
    if failed:
        lines.append("")
        lines.append("broken clauses:")
        lines.extend(f"  {o.adapter}: {o.clause} in {o.method}(): {o.violation}" for o in failed)
    skipped = [o for o in outcomes if o.status == "not_applicable"]
    if skipped:
        lines.append("")
        lines.append("not applicable:")
        lines.extend(f"  {o.adapter}: {o.clause} ({o.reason})" for o in skipped)
    latency_rows = []
    for adapter, items in by_adapter.items():
        merged: dict[str, list[float]] = {}
        for outcome in items:
            for method, seconds in outcome.latencies.items():
                merged.setdefault(method, []).extend(seconds)
        for stat in latency_stats(merged):
            latency_rows.append(
                [adapter, stat.method, f"{stat.calls:,}", f"{stat.p50 * 1000:,.2f}", f"{stat.p95 * 1000:,.2f}", f"{stat.max * 1000:,.2f}"]
            )
    if latency_rows:
        lines.append("")
        lines.append("latency per call over all clauses (ms):")
        lines.extend(
            format_table(["adapter", "method", "calls", "p50", "p95", "max"], latency_rows, [False, False, True, True, True, True])
        )
    advisories = [f"{o.adapter}: {advisory}" for o in outcomes for advisory in o.advisories]
    if advisories:
        lines.append("")
        lines.append("over the latency ceiling (advisory):")
        lines.extend(f"  {line}" for line in advisories)
    return lines
