"""Terminal tables for statistics and comparisons, as plain lines (the plugin and ``lens compare`` print them).

Lines carry no colour codes: :func:`line_markup` says which lines deserve colour, and
pytest's TerminalWriter applies it only when colour is wanted (it honours ``NO_COLOR``,
``PY_COLORS`` and ``--color``). Arrows fall back to ASCII when the output encoding
cannot show them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_lens.analysis.format import METRIC_LABELS, format_delta, format_estimate, format_p, format_table, signed
from pytest_lens.analysis.gates import units_text
from pytest_lens.records.statistics import (
    POWER,
    BaselineAdapterComparison,
    BaselineComparison,
    Ceiling,
    PairedTest,
    RunStatistics,
    Sensitivity,
)

__all__ = [
    "ASCII_ARROWS",
    "UNICODE_ARROWS",
    "Arrows",
    "arrows_for",
    "ceiling_lines",
    "changed_counts",
    "comparison_lines",
    "detectable_lines",
    "line_markup",
    "metric_interval_lines",
    "pair_lines",
    "pair_result",
    "sensitivity_lines",
    "statistics_section",
    "status_text",
]

#: The result words that colour a line (also searched for by :func:`line_markup`).
REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no significant change"
DROPPED = "drop over --lens-max-drop"
INFERIOR = "drop bound over --lens-margin"
#: The result words of the sensitivity table.
DETECTED = "detected"
NOT_DETECTED = "NOT detected"


@dataclass(frozen=True)
class Arrows:
    """Direction marks for a drop and a rise."""

    down: str
    up: str
    flip: str


UNICODE_ARROWS = Arrows("▼", "▲", "→")
ASCII_ARROWS = Arrows("v", "^", "->")


def arrows_for(encoding: str | None) -> Arrows:
    """Unicode arrows when ``encoding`` can write them, else ASCII ones."""
    try:
        "▼▲→".encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII_ARROWS
    return UNICODE_ARROWS


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def line_markup(line: str) -> dict[str, bool]:
    """TerminalWriter markup for a summary line: failures and regressions red, passes and improvements green."""
    stripped = line.lstrip()
    if stripped.startswith("LENS verdict: FAIL"):
        return {"red": True, "bold": True}
    if stripped.startswith("LENS verdict: PASS"):
        return {"green": True}
    if stripped.startswith("FAIL ") or line.rstrip().endswith(REGRESSION) or DROPPED in line or INFERIOR in line:
        return {"red": True}
    if line.rstrip().endswith(IMPROVEMENT):
        return {"green": True}
    if f" {NOT_DETECTED}" in line:
        return {"yellow": True}
    return {}


def metric_interval_lines(statistics: RunStatistics) -> list[str]:
    """Metric means (rows) per adapter (columns), each with its bootstrap CI."""
    keys = list(statistics.adapters)
    if not keys:
        return []
    present = {name for s in statistics.adapters.values() for name in s.metrics}
    names = [name for name in METRIC_LABELS if name in present] + sorted(present - set(METRIC_LABELS))
    rows = [
        [
            _label(name),
            *(format_estimate(statistics.adapters[k].metrics[name]) if name in statistics.adapters[k].metrics else "-" for k in keys),
        ]
        for name in names
    ]
    level = f"{statistics.confidence:.0%}"
    how = {
        "clustered": f"jackknife over {statistics.clusters} scopes, t({(statistics.clusters or 0) - 1})",
        "two-stage": f"two-stage bootstrap over {statistics.clusters} scopes, {statistics.resamples} resamples, seed {statistics.seed}, "
        f"t({(statistics.clusters or 0) - 1})",
    }.get(statistics.bootstrap, "over the questions, t(n - 1)")
    return [
        f"metric means with {level} t intervals ({how}):",
        *format_table(["metric", *keys], rows, [False, *([True] * len(keys))]),
    ]


def detectable_lines(statistics: RunStatistics, alpha: float) -> list[str]:
    """Before a baseline exists: the smallest drop of each adapter's headline a later comparison could detect.

    From this run's own standard error of the headline: two independent runs' difference has ``sqrt(2)`` times it
    (an upper bound: a paired comparison where most questions score alike, as with a deterministic agent, sees less),
    with the interval's t reference.
    """
    from pytest_lens.analysis.inference import minimum_detectable_effect

    found = {
        key: minimum_detectable_effect(2**0.5 * s.composite.se, alpha=alpha, df=s.composite.df)
        for key, s in statistics.adapters.items()
        if s.composite.se is not None
    }
    if not found:
        return []
    values = ", ".join(f"{key} {value:.3f}" for key, value in found.items())
    return [
        f"detectable drop (before a baseline; one-sided alpha {alpha:g}, {POWER:.0%} power, from this run's per-question variance, "
        f"as if a second run were independent): {values}"
    ]


def pair_result(test: PairedTest, alpha: float, subject: str, arrows: Arrows) -> str:
    """``▲ bm25 higher`` when the Holm-adjusted test is significant, else ``no significant difference``."""
    if test.p_adjusted < alpha and test.delta.value != 0:
        return f"{arrows.down if test.delta.value < 0 else arrows.up} {subject} {'lower' if test.delta.value < 0 else 'higher'}"
    return "no significant difference"


def changed_counts(test: PairedTest, arrows: Arrows) -> str:
    """``3▼ 1▲``: questions that fell and rose."""
    return f"{test.n_down}{arrows.down} {test.n_up}{arrows.up}"


def _significant_metrics(tests: Sequence[PairedTest], alpha: float, arrows: Arrows) -> str:
    parts = [
        f"{_label(t.metric)} {arrows.down if t.delta.value < 0 else arrows.up} {signed(t.delta.value)} (p={format_p(t.p_adjusted)})"
        for t in tests
        if t.p_adjusted < alpha
    ]
    return "; ".join(parts)


def pair_lines(statistics: RunStatistics, alpha: float, arrows: Arrows = UNICODE_ARROWS) -> list[str]:
    """Every pair of adapters: composites, delta with CI, Holm p, effect size; then Kendall's W."""
    out: list[str] = []
    if statistics.pairs:
        out.append(
            f"adapters compared (paired by question; two-sided {statistics.pairs[0].composite.method} of the mean difference, "
            f"Holm over {len(statistics.pairs)} pair(s); delta = second - first, {statistics.confidence:.0%} CI; "
            f"MDE: smallest difference detectable at alpha {alpha:g} with {POWER:.0%} power):"
        )
        several_budgets = len({pair.budget for pair in statistics.pairs}) > 1
        rows = []
        for pair in statistics.pairs:
            test = pair.composite
            label = f"{pair.first} vs {pair.second}" + (f" @{pair.budget}" if several_budgets else "")
            rows.append(
                [
                    label,
                    str(test.n_pairs),
                    f"{test.first:.3f}",
                    f"{test.second:.3f}",
                    format_delta(test.delta),
                    _mde(test),
                    format_p(test.p_adjusted),
                    f"{test.effect_size:+.2f}",
                    changed_counts(test, arrows),
                    pair_result(test, alpha, pair.second, arrows),
                ]
            )
        headers = ["pair", "n", "first", "second", "delta [CI]", "MDE", "p (Holm)", "effect r", "changed", "result"]
        out.extend(format_table(headers, rows, [False, True, True, True, True, True, True, True, True, False]))
        for pair in statistics.pairs:
            if not pair.composite.detectable and pair.composite.p_adjusted >= alpha:
                out.append(f"  {pair.first} vs {pair.second}: cannot detect any difference with {units_text(pair.composite)}")
            metrics = _significant_metrics(pair.metrics, alpha, arrows)
            if metrics:
                out.append(f"  {pair.first} vs {pair.second} metrics (Holm p < {alpha:g}): {metrics}")
    for found in statistics.concordance:
        agreement = "scopes agree on the ranking" if found.p_value < alpha else "no significant agreement between scopes"
        out.append(
            f"Kendall's W across {len(found.scopes)} scopes ({found.budget}, {len(found.adapters)} adapters): W={found.w:.2f}, "
            f"Friedman chi2={found.chi_square:.2f}, df={len(found.adapters) - 1}, p={format_p(found.p_value)} - {agreement}"
        )
    return out


def _mde(test: PairedTest) -> str:
    return "-" if test.mde is None else f"{test.mde:.3f}"


def status_text(entry: BaselineAdapterComparison, arrows: Arrows) -> str:
    """The result column of a baseline comparison: regression, improvement, drop, no change, not in baseline."""
    if entry.status == "regression":
        return f"{arrows.down} {REGRESSION}"
    if entry.status == "improvement":
        return f"{arrows.up} {IMPROVEMENT}"
    if entry.status == "not compared":
        return "not in baseline"
    if entry.dropped:
        return f"{arrows.down} {DROPPED} ({NO_CHANGE})"
    if entry.inferior:
        return f"{arrows.down} {INFERIOR} ({NO_CHANGE})"
    return NO_CHANGE


def comparison_lines(
    comparison: BaselineComparison, *, gating: bool, arrows: Arrows = UNICODE_ARROWS, gate_option: str = "--lens-compare-fail"
) -> list[str]:
    """The comparison with a baseline: header, warnings, one row per adapter, then flipped questions and drops."""
    info = comparison.baseline
    origin = ", ".join(
        part
        for part in (
            f"saved {info.created}" if info.created else "",
            f"commit {info.commit[:10]}" if info.commit else "",
            info.machine or "",
        )
        if part
    )
    compared = [c for c in comparison.adapters if c.regression is not None]
    drop = f", max drop {comparison.max_drop:g}" if comparison.max_drop is not None else ""
    margin = f", margin {comparison.margin:g} (non-inferiority)" if comparison.margin is not None else ""
    name = comparison.inference
    out = [
        f"compared with baseline {info.name} ({info.path}{'; ' + origin if origin else ''})",
        f"  one-sided {name} of the mean drop, paired by question, Holm over {len(compared)} adapter(s), "
        f"alpha {comparison.alpha:g}{drop}{margin}; MDE: smallest drop detectable with {POWER:.0%} power; "
        f"drop <=: one-sided {1 - comparison.alpha:.0%} upper bound of the drop",
    ]
    out.extend(f"  warning: {warning}" for warning in comparison.warnings)
    rows = []
    for entry in comparison.adapters:
        test = entry.regression
        if test is None:
            rows.append([entry.key, "0", "-", "-", "-", "-", "-", "-", "-", "-", status_text(entry, arrows)])
            continue
        rows.append(
            [
                entry.key,
                str(test.n_pairs),
                f"{test.first:.3f}",
                f"{test.second:.3f}",
                format_delta(test.delta),
                _mde(test),
                "-" if test.drop_bound is None else f"{test.drop_bound:.3f}",
                format_p(test.p_adjusted),
                f"{test.effect_size:+.2f}",
                changed_counts(test, arrows),
                status_text(entry, arrows),
            ]
        )
    headers = ["adapter", "n", "baseline", "this run", "delta [CI]", "MDE", "drop <=", "p (Holm)", "effect r", "changed", "result"]
    out.extend(format_table(headers, rows, [False, True, True, True, True, True, True, True, True, True, False]))
    for entry in comparison.adapters:
        test = entry.regression
        if test is not None and not test.detectable and entry.status != "regression":  # a drop it found was detected
            out.append(f"  {entry.key}: cannot detect any drop with {units_text(test)}: no minimum detectable effect to state")
        if test is not None and test.signed_rank_p is not None and test.n_changed:
            out.append(
                f"  {entry.key}: {test.n_down} question(s) fell, {test.n_up} rose (Wilcoxon signed-rank, one-sided "
                f"p={format_p(test.signed_rank_p)}: which way questions moved, not by how much; not the gate's test)"
            )
        if entry.largest_drops:
            drops = ", ".join(f"{d.question_id} {signed(d.delta)}" for d in entry.largest_drops)
            out.append(f"  {entry.key}: largest drops: {drops}")
        if entry.flipped:
            flips = ", ".join(f"{f.question_id} {f.before}{arrows.flip}{f.after}" for f in entry.flipped[:5])
            more = f" and {len(entry.flipped) - 5} more" if len(entry.flipped) > 5 else ""
            out.append(f"  {entry.key}: flipped: {flips}{more}")
        metrics = _significant_metrics(entry.metrics, comparison.alpha, arrows)
        if metrics:
            out.append(f"  {entry.key}: metrics that changed (two-sided, Holm): {metrics}")
        if entry.baseline_only or entry.run_only:
            out.append(
                f"  {entry.key}: {entry.baseline_only} baseline question(s) not in this run, {entry.run_only} new question(s) not compared"
            )
    if comparison.missing:
        out.append(f"  in the baseline but not in this run: {', '.join(comparison.missing)}")
    if not gating:
        out.append(f"  (this comparison does not gate the run; add {gate_option} to fail on a regression)")
    return out


@dataclass(frozen=True)
class LinesSection:
    """A block of the summary whose lines are ready (a :class:`~pytest_lens.reports.terminal.ReportSection`)."""

    lines: list[str]


def statistics_section(
    statistics: RunStatistics, comparison: BaselineComparison | None, alpha: float, gating: bool, encoding: str | None
) -> LinesSection:
    """Metric CIs, adapter pairs with Kendall's W, and the baseline comparison, for output in ``encoding``."""
    arrows = arrows_for(encoding)
    lines = metric_interval_lines(statistics)
    if comparison is None:
        lines += detectable_lines(statistics, alpha)
    pairs = pair_lines(statistics, alpha, arrows)
    if pairs:
        lines += ["", *pairs]
    if comparison is not None:
        lines += ["", *comparison_lines(comparison, gating=gating, arrows=arrows)]
    return LinesSection(lines)


def sensitivity_lines(sensitivity: Sensitivity, arrows: Arrows = UNICODE_ARROWS) -> list[str]:
    """The sensitivity table: per user adapter, each control and mutant, its delta with CI, one-sided p, detected or not."""
    if not sensitivity.rows:
        return []
    out = [
        f"sensitivity (--lens-controls): could this run tell each adapter from a degraded copy of it? "
        f"{sensitivity.metric}, control - adapter, paired by question; one-sided {sensitivity.rows[0].test.method} of the mean drop, "
        f"alpha {sensitivity.alpha:g}, each row tested alone (no correction across rows); "
        f"MDE: smallest drop detectable with {POWER:.0%} power",
    ]
    rows = []
    for row in sensitivity.rows:
        test = row.test
        result = DETECTED if row.detected else NOT_DETECTED
        if not row.detected and not test.n_changed:
            result += " (no question changed)"
        elif not row.detected and not test.detectable:
            result += f" (cannot detect any drop with {units_text(test)})"
        rows.append(
            [
                row.adapter,
                row.control,
                row.degradation,
                str(test.n_pairs),
                f"{test.first:.3f}",
                f"{test.second:.3f}",
                format_delta(test.delta),
                _mde(test),
                format_p(test.p_value),
                changed_counts(test, arrows),
                result,
            ]
        )
    headers = ["adapter", "control", "degradation", "n", "adapter", "control", "delta [CI]", "MDE", "p (1-sided)", "changed", "result"]
    out.extend(format_table(headers, rows, [False, False, False, True, True, True, True, True, True, True, False]))
    for row in sensitivity.rows:
        seen = sorted((t for t in row.metrics if t.p_adjusted < sensitivity.alpha and t.delta.value < 0), key=lambda t: t.p_adjusted)
        if seen:
            parts = ", ".join(f"{_label(t.metric)} {signed(t.delta.value)} (p={format_p(t.p_adjusted)})" for t in seen[:5])
            more = f" and {len(seen) - 5} more" if len(seen) > 5 else ""
            out.append(f"  {row.control} vs {row.adapter}: metrics that dropped (one-sided, Holm over {len(row.metrics)}): {parts}{more}")
    for row in sensitivity.rows:
        if row.flag is not None:
            out.append(
                f"  WARNING {row.adapter}: {row.flag}: its {sensitivity.metric} is {row.test.second:.3f} when its memory is built by "
                f"an empty extractor, against {row.test.first:.3f} ({format_delta(row.test.delta)}, p={format_p(row.test.p_value)}): "
                "it scores something other than the memory the model built"
            )
    missed = [row.control for row in sensitivity.rows if not row.detected]
    out.append(
        "  detected: a change doing this to the adapter fails --lens-compare-fail on this data; "
        + (f"not detected ({', '.join(missed)}): it would pass unnoticed" if missed else "every control was detected")
    )
    return out


#: Suspect questions the terminal names (the artifact and the HTML report list them all).
SHOWN_SUSPECTS = 10


def ceiling_lines(ceiling: Ceiling) -> list[str]:
    """Each adapter between the floor and the oracle's ceiling, then the questions even the oracle fails."""
    floors = ", ".join(f"{budget} {value:.3f}" for budget, value in ceiling.floor_scores.items())
    tops = ", ".join(f"{budget} {value:.3f}" for budget, value in ceiling.oracle_scores.items())
    floor = f"{ceiling.floor} {floors}" if ceiling.floor is not None else "0 (no random or null adapter ran; --lens-controls adds them)"
    out = [
        f"floor and ceiling ({ceiling.metric}): floor {floor}; ceiling {ceiling.oracle} {tops} (the required evidence ranked "
        f"first, the same agent and budget); share = (adapter - floor) / (oracle - floor) on the questions all three scored, "
        f"95% CI; memory losses: questions the oracle passes and the adapter fails (below {ceiling.fails_below:g})",
    ]
    rows = [
        [row.adapter, str(row.n), f"{row.score:.3f}", format_estimate(row.share) if row.share is not None else "-", str(row.memory_losses)]
        for row in ceiling.rows
    ]
    out.extend(format_table(["adapter", "n", "score", "share of range [CI]", "memory losses"], rows, [False, True, True, True, True]))
    asked = sum(ceiling.oracle_questions.values())
    if not ceiling.suspects:
        out.append(f"agent or answer-key suspects: none (the oracle scores {ceiling.fails_below:g} or more on all {asked} questions)")
        return out
    out.append(
        f"agent or answer-key suspects: {len(ceiling.suspects)} of {asked} questions the oracle fails although it handed the agent "
        "their required evidence first (not counted as any memory's loss):"
    )
    for suspect in ceiling.suspects[:SHOWN_SUSPECTS]:
        out.append(f"  {suspect.score:.3f}  {suspect.scope_id} {suspect.question_id} ({suspect.question_type})")
    if len(ceiling.suspects) > SHOWN_SUSPECTS:
        out.append(f"  ... and {len(ceiling.suspects) - SHOWN_SUSPECTS} more (the artifact's ceiling.suspects lists them all)")
    return out
