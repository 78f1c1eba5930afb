"""The run's gates, each a pass/fail with a one-line explanation; failures set the exit status.

Hard gates (per adapter composite zeroed) are always on; ``--lens-fail-under`` and
``--lens-compare-fail`` are added by options. :func:`check_gates` is pure: the session
feeds it summaries and the baseline comparison, the report prints its lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_lens.analysis.format import format_p
from pytest_lens.records.results import AdapterSummary
from pytest_lens.records.statistics import POWER, BaselineAdapterComparison, BaselineComparison, PairedTest
from pytest_lens.scoring.composite import HardGate

__all__ = ["GateCheck", "GatePolicy", "check_gates", "compare_gate", "coverage_gaps", "detectable", "rate_gate", "units_text"]


@dataclass(frozen=True)
class GatePolicy:
    """Which optional gates are on (from ``--lens-fail-under``, ``--lens-compare-fail``, ``--lens-alpha``, ``--lens-max-drop``)."""

    fail_under: float | None = None
    compare_fail: bool = False
    alpha: float = 0.05
    max_drop: float | None = None
    #: ``--lens-margin``: non-inferiority margin on the upper bound of the headline's drop.
    margin: float | None = None
    #: ``--lens-judge-max-failures`` (``None``: no judge, no gate).
    judge_max_failures: float | None = None
    #: ``--lens-max-not-measured`` (``None``: no LLM configured, no gate).
    max_not_measured: float | None = None
    #: ``--lens-max-fault-rate`` (``None``: no gate).
    max_fault_rate: float | None = None
    #: ``--lens-compare-partial``: a comparison may leave out questions of either run (otherwise that fails the gate).
    compare_partial: bool = False
    #: How that permission is spelled where the gate is printed (``lens compare`` spells it ``--partial``).
    partial_option: str = "--lens-compare-partial"
    #: How accepting an unlike baseline is spelled where the gate is printed (``lens compare``: ``--accept-unlike``).
    accept_option: str = "--lens-accept-unlike"


@dataclass(frozen=True)
class GateCheck:
    """One gate's outcome."""

    gate: str
    passed: bool
    detail: str
    kind: Literal["hard", "fail_under", "compare", "rate"] = "hard"

    @property
    def line(self) -> str:
        """``pass  --lens-fail-under=0.5: every composite >= 0.5 (lowest bm25 0.813)``."""
        return f"{'pass' if self.passed else 'FAIL'}  {self.gate}: {self.detail}"

    @property
    def reason(self) -> str:
        """The failure as a verdict reason."""
        return f"{self.gate}: {self.detail}"


def check_gates(
    summaries: Mapping[str, AdapterSummary],
    hard_gates: Sequence[HardGate],
    policy: GatePolicy,
    comparison: BaselineComparison | None = None,
    *,
    suite_summaries: Mapping[str, AdapterSummary] | None = None,
    suite_comparisons: Mapping[str, BaselineComparison] | None = None,
    headline: str = "composite",
    not_measured: Mapping[str, tuple[int, int]] | None = None,
    faults: Mapping[str, tuple[int, int]] | None = None,
) -> list[GateCheck]:
    """Every active gate, in a fixed order: hard gates, fault and failure rates, minimum headline, baseline regression.

    ``--lens-fail-under`` and the regression gate are about each summary's headline (``headline``
    names LENS's: the retrieval score, or the composite). ``suite_summaries`` (keyed ``suite:adapter``)
    are held to ``--lens-fail-under`` by their own score; each of ``suite_comparisons`` gets its own
    regression gate. LENS's regression gate is left out when the run has no LENS question and some
    suite was compared. ``not_measured`` is ``(not measured, asked)`` per summary key, for the keys
    with questions not measured; ``faults`` is ``(faulted, asked)`` per key asked a question
    (:func:`~pytest_lens.analysis.summary.fault_counts`, which also counts the faults of questions not
    measured), else the summaries' own counts. Controls (``--lens-controls``) are never held to a gate: a null
    memory is gated by design.
    """
    summaries = {key: s for key, s in summaries.items() if s.control is None}
    suite_summaries = {key: s for key, s in (suite_summaries or {}).items() if s.control is None}
    checks = [_hard_gates(summaries, hard_gates)]
    every = {**summaries, **(suite_summaries or {})}
    if policy.max_fault_rate is not None:
        counted = dict(faults) if faults is not None else {key: (s.faults, s.n_questions) for key, s in every.items()}
        checks.append(
            rate_gate(
                f"--lens-max-fault-rate={policy.max_fault_rate:g}",
                {key: found for key, found in counted.items() if found[0]},
                policy.max_fault_rate,
                problem="faults",
                consequence="their scores are not comparable (each such question failed: its failure names adapter and method)",
                clean="no fault",
                checked=len(counted),
            )
        )
    if policy.max_not_measured is not None:
        checks.append(
            rate_gate(
                f"--lens-max-not-measured={policy.max_not_measured:g}",
                dict(not_measured or {}),
                policy.max_not_measured,
                problem="no answer from the model",
                consequence="those questions are not measured (failed tests, left out of composites and statistics)",
                clean="every question measured",
                checked=len(every),
            )
        )
    if policy.judge_max_failures is not None:
        checks.append(
            rate_gate(
                f"--lens-judge-max-failures={policy.judge_max_failures:g}",
                {key: (s.scoring_failures, s.n_questions) for key, s in every.items() if s.scoring_failures},
                policy.judge_max_failures,
                problem="judge failed",
                consequence="their judge metrics are absent",
                clean="no judge failure",
                checked=len(every),
            )
        )
    if policy.fail_under is not None:
        checks.append(_fail_under(every, policy.fail_under))
    if policy.compare_fail:
        if summaries or not suite_comparisons:
            checks.append(compare_gate(comparison, policy, subject=headline))
        for suite, found in (suite_comparisons or {}).items():
            checks.append(compare_gate(found, policy, name=f"--lens-compare-fail [suite {suite}]", subject="score"))
    return checks


def _hard_gates(summaries: Mapping[str, AdapterSummary], hard_gates: Sequence[HardGate]) -> GateCheck:
    rule = ", ".join(f"{gate.metric} < {gate.threshold:g}" for gate in hard_gates) or "none configured"
    name = f"hard gates ({rule} zeroes the composite)"
    gated = [f"{key} {', '.join(s.gate_reasons)}" for key, s in summaries.items() if s.gated]
    if gated:
        return GateCheck(name, False, "; ".join(gated), "hard")
    return GateCheck(name, True, f"no adapter gated ({len(summaries)} checked)", "hard")


def rate_gate(
    name: str,
    counts: Mapping[str, tuple[int, int]],
    limit: float,
    *,
    problem: str,
    consequence: str = "",
    clean: str,
    checked: int,
) -> GateCheck:
    """Fails when, for some key, more than ``limit`` of its questions had ``problem``; ``counts`` is ``(with it, of)`` per key.

    One gate for every "too many questions went wrong" rule (judge failures, questions not measured, ...), so they
    read alike: ``FAIL  --lens-judge-max-failures=0.05: bm25: judge failed on 2 of 8 questions (25%); ...``.
    ``clean`` says that no question had the problem.
    """
    rows = {key: (hit, total) for key, (hit, total) in counts.items() if hit and total}

    def share(key: str, hit: int, total: int) -> str:
        return f"{key}: {problem} on {hit} of {total} questions ({hit / total:.0%})"

    over = [share(key, hit, total) for key, (hit, total) in rows.items() if hit / total > limit]
    if over:
        return GateCheck(name, False, "; ".join(over) + (f"; {consequence}" if consequence else ""), "rate")
    if rows:
        return GateCheck(name, True, "; ".join(share(key, hit, total) for key, (hit, total) in rows.items()) + ": within the limit", "rate")
    return GateCheck(name, True, f"{clean} ({checked} adapter(s) checked)", "rate")


def _fail_under(summaries: Mapping[str, AdapterSummary], threshold: float) -> GateCheck:
    name = f"--lens-fail-under={threshold:g}"
    if not summaries:
        return GateCheck(name, False, "no results to check", "fail_under")
    below = [f"{key} {s.headline_name} {s.headline:.3f} < {threshold:g}" for key, s in summaries.items() if s.headline < threshold]
    if below:
        return GateCheck(name, False, "; ".join(below), "fail_under")
    lowest_key, lowest = min(summaries.items(), key=lambda item: item[1].headline)
    names = " / ".join(dict.fromkeys(s.headline_name for s in summaries.values()))
    return GateCheck(name, True, f"every {names} >= {threshold:g} (lowest: {lowest_key} {lowest.headline:.3f})", "fail_under")


def compare_gate(
    comparison: BaselineComparison | None, policy: GatePolicy, name: str = "--lens-compare-fail", subject: str = "composite"
) -> GateCheck:
    """Fails on what :meth:`BaselineComparison.fails` fails, on nothing compared, or on a partial comparison.

    A comparison is partial when it leaves out questions of either run (:func:`coverage_gaps`);
    ``policy.compare_partial`` allows it. Otherwise a baseline saved from an interrupted run, or a run that lost
    questions, would pass on the few questions both have.
    """
    if comparison is None:
        return GateCheck(name, False, "no baseline to compare with (give --lens-baseline=NAME|PATH)", "compare")
    baseline = comparison.baseline.name
    compared = [entry for entry in comparison.adapters if entry.regression is not None]
    if not compared:
        return GateCheck(name, False, f"no question of this run is in baseline {baseline}: nothing could be compared", "compare")
    failures = [_failure(entry, comparison, policy, subject) for entry in comparison.regressions]
    gaps = "; ".join(coverage_gaps(comparison))
    if gaps and not policy.compare_partial:
        failures.append(f"partial comparison, {gaps} (pass {policy.partial_option} to gate on the questions both runs have)")
    unlike = (
        f"; unlike runs compared, accepted by {policy.accept_option}: {'; '.join(comparison.accepted_unlike)}"
        if comparison.accepted_unlike
        else ""
    )
    if failures:
        return GateCheck(name, False, f"vs baseline {baseline}: " + "; ".join(failures) + unlike, "compare")
    drop = f", no drop over {policy.max_drop:g}" if policy.max_drop is not None else ""
    partial = f"; partial comparison allowed by {policy.partial_option}: {gaps}" if gaps else ""
    power = "".join(detectable(entry.regression, entry.key) for entry in compared if entry.regression is not None)
    if comparison.margin is not None:
        bounds = ", ".join(_within_margin(entry, comparison.margin) for entry in compared)
        detail = (
            f"non-inferior vs baseline {baseline}: {bounds} (one-sided {1 - policy.alpha:.0%} bound{drop}; "
            f"{len(compared)} adapter(s) compared{partial}){power}{unlike}"
        )
        return GateCheck(name, True, detail, "compare")
    detail = (
        f"no significant regression vs baseline {baseline} (alpha {policy.alpha:g}{drop}; {len(compared)} adapter(s) compared{partial})"
        f"{power}{unlike}"
    )
    return GateCheck(name, True, detail, "compare")


def _failure(entry: BaselineAdapterComparison, comparison: BaselineComparison, policy: GatePolicy, subject: str) -> str:
    """Why ``entry`` fails the gate: its change, then each cause."""
    test = entry.regression
    assert test is not None  # only compared entries fail
    change = f"{entry.key} {subject} {test.first:.3f} -> {test.second:.3f} ({test.delta.value:+.3f})"
    causes = []
    if entry.dropped and policy.max_drop is not None:
        causes.append(f"drop {-test.delta.value:.3f} > --lens-max-drop={policy.max_drop:g}")
    if comparison.margin is not None and entry.inferior:
        bound = f"one-sided {1 - test.alpha:.0%} bound"
        causes.append(
            f"drop could be as large as {test.drop_bound:.3f} ({bound}) > --lens-margin={comparison.margin:g}"
            if test.drop_bound is not None
            else f"non-inferiority cannot be shown with {units_text(test)} (no bound)"
        )
    elif comparison.margin is None and entry.status == "regression":
        causes.append(f"regression p={format_p(test.p_adjusted)} (one-sided {test.method}, Holm) < alpha {policy.alpha:g}")
    elif comparison.margin is None and not test.detectable and not entry.dropped:
        causes.append(
            f"it fell, and the test cannot detect any drop with {units_text(test)} ({_why_undetectable(test)}): "
            "add questions (or scopes), or gate the observed drop with --lens-max-drop"
        )
    return f"{change}: {' and '.join(causes)}{detectable(test) if test.detectable else ''}"


def _within_margin(entry: BaselineAdapterComparison, margin: float) -> str:
    """``bm25 drop at most 0.012 <= --lens-margin=0.05`` (with the test's verdict when it found a drop)."""
    test = entry.regression
    assert test is not None and test.drop_bound is not None  # a compared entry within the margin has its bound
    found = f" (a significant drop, p={format_p(test.p_adjusted)}, within the margin)" if entry.status == "regression" else ""
    return f"{entry.key} drop at most {test.drop_bound:.3f} <= --lens-margin={margin:g}{found}"


def units_text(test: PairedTest) -> str:
    """``4 questions`` or ``3 scopes``: what the test counted as independent."""
    count = test.units if test.units is not None else test.n_pairs
    unit = "scope" if test.bootstrap != "plain" else "question"
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _why_undetectable(test: PairedTest) -> str:
    if test.units is None or test.units < 2:
        return "a test needs two or more"
    return f"its smallest detectable drop exceeds the baseline's whole score {test.first:.3f}"


def detectable(test: PairedTest, key: str | None = None) -> str:
    """``; this run can detect a drop of 0.031 or more (alpha 0.05, 80% power)``, or that it cannot detect any drop."""
    who = f" ({key})" if key else ""
    if not test.detectable:
        return f"; cannot detect any drop with {units_text(test)}{who}"
    if not test.mde:  # no spread at all (every question scored alike in both runs): nothing to size
        return ""
    return f"; this run can detect a drop of {test.mde:.3f} or more{who} (alpha {test.alpha:g}, {POWER:.0%} power)"


def coverage_gaps(comparison: BaselineComparison) -> list[str]:
    """What a comparison leaves out: per adapter, baseline questions not in this run and questions not in the baseline.

    Questions either run could not score count too: they are not compared either. Baseline adapters this run
    did not measure are one more gap.
    """
    gaps = []
    for entry in comparison.adapters:
        parts = [f"{entry.baseline_only} baseline question(s) not in this run"] if entry.baseline_only else []
        parts += [f"{entry.run_only} question(s) of this run not in the baseline"] if entry.run_only else []
        if parts:
            gaps.append(f"{entry.key}: {' and '.join(parts)}")
    if comparison.missing:
        gaps.append(f"baseline adapter(s) not in this run: {', '.join(comparison.missing)}")
    return gaps
