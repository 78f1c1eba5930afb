"""The sensitivity table, and controls kept out of pairs, baselines and gates."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from pytest_lens.analysis import stats
from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.gates import GatePolicy, check_gates
from pytest_lens.analysis.run import analyze_run
from pytest_lens.analysis.sensitivity import sensitivity
from pytest_lens.analysis.summary import summarize
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.settings import ControlRole
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.reports.render import sensitivity_lines
from pytest_lens.reports.terminal import LensReport, Verdict
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1

N = 12


def run_of(adapter: str, coverages: list[float], control: ControlRole | None = None, grounding: float = 1.0) -> list[QuestionResult]:
    return [
        result(f"q{i:02d}", tier1(grounding, c), adapter=adapter).model_copy(update={"control": control}) for i, c in enumerate(coverages)
    ]


def controlled_run() -> list[QuestionResult]:
    """``bm25`` with a control memory and two mutants: one that loses every question's evidence, one that changes two."""
    return [
        *run_of("bm25", [1.0] * N),
        *run_of("null", [0.0] * N, ControlRole("null"), grounding=0.0),
        *run_of("bm25/top2", [0.0] * N, ControlRole("mutant", "bm25", "top2")),
        *run_of("bm25/shuffled", [0.5] * 2 + [1.0] * (N - 2), ControlRole("mutant", "bm25", "shuffled")),
    ]


def test_each_control_is_tested_one_sided_against_its_adapter() -> None:
    found = sensitivity(controlled_run(), DEFAULT_WEIGHTS, DEFAULT_GATES, alpha=0.05, seed=1)
    assert found is not None and found.metric == "composite" and found.alpha == 0.05
    rows = {row.control: row for row in found.rows}
    assert list(rows) == ["null", "bm25/top2", "bm25/shuffled"]  # the control memories first, then mutants in catalog order
    top2 = rows["bm25/top2"]
    assert (top2.adapter, top2.kind, top2.mutant, top2.degradation) == ("bm25", "mutant", "top2", "results truncated to 2")
    assert top2.test.alternative == "less" and top2.test.n_down == N
    assert top2.test.p_value == pytest.approx(0.5**N)  # all twelve dropped alike: no spread, the exact sign-flip p
    assert top2.test.delta.value == pytest.approx(top2.test.second - top2.test.first) and top2.test.delta.value < 0
    assert top2.detected and rows["null"].detected
    coverage = next(t for t in top2.metrics if t.metric == "evidence_coverage")
    assert coverage.alternative == "less" and coverage.delta.value == -1.0
    grounding = next(t for t in top2.metrics if t.metric == "evidence_grounding")
    assert grounding.n_changed == 0 and grounding.p_adjusted == 1.0
    assert [t.p_adjusted for t in top2.metrics] == pytest.approx(stats.holm([t.p_value for t in top2.metrics]))
    shuffled = rows["bm25/shuffled"]
    # The paired t-test of the per-question differences (two fell, ten did not move).
    differences = [r.composite - a.composite for a, r in zip(run_of("bm25", [1.0] * N), controlled_run()[3 * N :], strict=True)]
    assert shuffled.test.n_changed == 2
    assert shuffled.test.p_value == pytest.approx(sps.ttest_1samp(differences, 0.0, alternative="less").pvalue, rel=1e-6)
    assert not shuffled.detected


def test_the_table_lists_every_row_and_says_what_goes_unnoticed() -> None:
    found = sensitivity(controlled_run(), DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1)
    assert found is not None
    lines = sensitivity_lines(found)
    assert lines[0].startswith("sensitivity (--lens-controls)") and "one-sided paired t-test over 12 questions (t(11))" in lines[0]
    body = "\n".join(lines)
    assert "bm25/top2" in body and "results truncated to 2" in body and "detected" in body
    shuffled = next(line for line in lines if line.startswith("bm25     bm25/shuffled"))
    assert shuffled.endswith("NOT detected")
    assert "  bm25/top2 vs bm25: metrics that dropped (one-sided, Holm over 4): ev.coverage -1.000 (p=9.8e-04)" in lines
    assert not any(line.startswith("  bm25/shuffled vs bm25: metrics") for line in lines)  # two questions: nothing significant
    assert lines[-1].endswith("not detected (bm25/shuffled): it would pass unnoticed")


def test_a_run_without_controls_has_no_table() -> None:
    assert sensitivity(run_of("bm25", [1.0] * N), DEFAULT_WEIGHTS, DEFAULT_GATES) is None


def test_controls_get_intervals_but_join_no_pair_of_user_adapters() -> None:
    results = controlled_run() + run_of("mine", [0.5] * N)
    analysis = analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1)
    assert set(analysis.adapters) == {"bm25", "null", "bm25/top2", "bm25/shuffled", "mine"}
    assert [(p.first, p.second) for p in analysis.pairs] == [("bm25", "mine")]


def test_controls_never_gate_the_run() -> None:
    summaries = summarize(controlled_run(), DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert summaries["null"].gated and summaries["null"].control == ControlRole("null")
    assert Verdict.from_summaries(summaries).exit_code == 0
    checks = check_gates(summaries, DEFAULT_GATES, GatePolicy(fail_under=0.5))
    assert all(check.passed for check in checks), [check.line for check in checks]
    assert "1 checked" in checks[0].detail
    row = next(line for line in LensReport(summaries).lines if line.startswith("null "))
    assert row.endswith("control (gated: evidence_grounding 0.000 < 0.5)")


def test_controls_of_either_run_are_no_ones_baseline() -> None:
    baseline = RunArtifact(pytest_lens_version="0", created="", run={}, results=controlled_run(), summary={})
    current = [r.model_copy(update={"metrics": tier1(1.0, 0.0)}) if r.control is not None else r for r in controlled_run()]
    info = BaselineInfo(name="main", path="main.json", created="")
    comparison = compare_with_baseline(current, RunIdentity(), baseline, info, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert [entry.key for entry in comparison.adapters] == ["bm25"] and comparison.missing == []
    assert comparison.regressions == []


@pytest.mark.parametrize(("empty_coverage", "flagged"), [(0.0, False), (1.0, True)])
def test_an_empty_extraction_control_the_run_cannot_tell_apart_is_flagged(empty_coverage: float, flagged: bool) -> None:
    from pytest_lens.records.statistics import INSENSITIVE_TO_THE_MODEL

    role = ControlRole("empty-extraction", "graph")
    results = [*run_of("graph", [1.0] * N), *run_of("graph/empty-extraction", [empty_coverage] * N, role)]
    found = sensitivity(results, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1)
    assert found is not None
    (row,) = found.rows
    assert (row.kind, row.degradation) == ("empty-extraction", "memory built by an empty extractor (the model extracts nothing)")
    assert row.detected is not flagged and row.flag == (INSENSITIVE_TO_THE_MODEL if flagged else None)
    warnings = [line for line in sensitivity_lines(found) if "WARNING" in line]
    assert [line.split(":")[0] for line in warnings] == (["  WARNING graph"] if flagged else [])
    assert all("insensitive to what the model built" in line for line in warnings)
