from __future__ import annotations

import pytest

from pytest_lens.analysis.gates import GatePolicy, check_gates
from pytest_lens.records.results import AdapterSummary
from pytest_lens.records.statistics import BaselineAdapterComparison, BaselineComparison, BaselineInfo, Estimate, PairedTest
from pytest_lens.scoring.composite import DEFAULT_GATES


def summary(adapter: str, composite: float, gated: bool = False) -> AdapterSummary:
    reasons = ["evidence_grounding 0.100 < 0.5"] if gated else []
    return AdapterSummary(adapter=adapter, budget="16k", n_questions=10, composite=composite, metrics={}, gated=gated, gate_reasons=reasons)


def comparison(delta: float, p: float, status: str, dropped: bool = False) -> BaselineComparison:
    test = PairedTest(
        metric="composite", n_pairs=24, n_changed=6, n_up=0, n_down=6, first=0.86, second=0.86 + delta,
        delta=Estimate(value=delta, n=24), alternative="less", statistic=0.0, p_value=p, p_adjusted=p,
        effect_size=-1.0, method="paired t-test over 24 questions (t(23))", units=24, df=23,
    )  # fmt: skip
    entry = BaselineAdapterComparison(key="bm25", adapter="bm25", budget="16k", regression=test, status=status, dropped=dropped)  # type: ignore[arg-type]
    return BaselineComparison(baseline=BaselineInfo(name="0001_main", path="p", created="c"), alpha=0.05, adapters=[entry])


SUMMARIES = {"bm25": summary("bm25", 0.813), "null": summary("null", 0.0, gated=True)}


@pytest.mark.parametrize(
    ("summaries", "policy", "compared", "lines"),
    [
        (
            {"bm25": summary("bm25", 0.813)},
            GatePolicy(),
            None,
            ["pass  hard gates (evidence_grounding < 0.5 zeroes the composite): no adapter gated (1 checked)"],
        ),
        (
            SUMMARIES,
            GatePolicy(),
            None,
            ["FAIL  hard gates (evidence_grounding < 0.5 zeroes the composite): null evidence_grounding 0.100 < 0.5"],
        ),
        (
            {"bm25": summary("bm25", 0.813)},
            GatePolicy(fail_under=0.8),
            None,
            [None, "pass  --lens-fail-under=0.8: every composite >= 0.8 (lowest: bm25 0.813)"],
        ),
        (
            {"bm25": summary("bm25", 0.813)},
            GatePolicy(fail_under=0.9),
            None,
            [None, "FAIL  --lens-fail-under=0.9: bm25 composite 0.813 < 0.9"],
        ),
        ({}, GatePolicy(fail_under=0.9), None, [None, "FAIL  --lens-fail-under=0.9: no results to check"]),
        (
            {"bm25": summary("bm25", 0.84)},
            GatePolicy(compare_fail=True),
            comparison(-0.022, 0.0156, "regression"),
            [
                None,
                "FAIL  --lens-compare-fail: vs baseline 0001_main: bm25 composite 0.860 -> 0.838 (-0.022): "
                "regression p=0.016 (one-sided paired t-test over 24 questions (t(23)), Holm) < alpha 0.05",
            ],
        ),
        (
            {"bm25": summary("bm25", 0.84)},
            GatePolicy(compare_fail=True, max_drop=0.01),
            comparison(-0.022, 0.125, "no significant change", dropped=True),
            [
                None,
                "FAIL  --lens-compare-fail: vs baseline 0001_main: bm25 composite 0.860 -> 0.838 (-0.022): "
                "drop 0.022 > --lens-max-drop=0.01",
            ],
        ),
        (
            {"bm25": summary("bm25", 0.86)},
            GatePolicy(compare_fail=True, max_drop=0.05),
            comparison(0.0, 1.0, "no significant change"),
            [
                None,
                "pass  --lens-compare-fail: no significant regression vs baseline 0001_main "
                "(alpha 0.05, no drop over 0.05; 1 adapter(s) compared)",
            ],
        ),
        (
            {"bm25": summary("bm25", 0.86)},
            GatePolicy(compare_fail=True),
            BaselineComparison(baseline=BaselineInfo(name="0001_main", path="p", created="c"), alpha=0.05, adapters=[]),
            [None, "FAIL  --lens-compare-fail: no question of this run is in baseline 0001_main: nothing could be compared"],
        ),
    ],
)
def test_each_gate_is_one_line(summaries, policy, compared, lines) -> None:  # type: ignore[no-untyped-def]
    checks = check_gates(summaries, DEFAULT_GATES, policy, compared)
    assert len(checks) == len(lines)
    for check, line in zip(checks, lines, strict=True):
        if line is not None:
            assert check.line == line
            assert check.passed == line.startswith("pass")


def test_sibling_suite_scores_meet_the_fail_under_gate_too() -> None:
    checks = check_gates(
        {"bm25": summary("bm25", 0.813)}, DEFAULT_GATES, GatePolicy(fail_under=0.5), suite_summaries={"meme:bm25": summary("bm25", 0.167)}
    )
    assert checks[1].line == "FAIL  --lens-fail-under=0.5: meme:bm25 composite 0.167 < 0.5"
    (_, only_suites) = check_gates({}, DEFAULT_GATES, GatePolicy(fail_under=0.1), suite_summaries={"mab:bm25": summary("bm25", 0.667)})
    assert only_suites.line == "pass  --lens-fail-under=0.1: every composite >= 0.1 (lowest: mab:bm25 0.667)"


def test_each_compared_suite_gets_its_own_regression_gate() -> None:
    policy = GatePolicy(compare_fail=True)
    suites = {"meme": comparison(-0.25, 0.002, "regression"), "mab": comparison(0.0, 1.0, "no significant change")}
    # A run of sibling suites only: LENS's own regression gate has nothing to compare and is left out.
    lines = [check.line for check in check_gates({}, DEFAULT_GATES, policy, None, suite_comparisons=suites)][1:]
    assert lines == [
        "FAIL  --lens-compare-fail [suite meme]: vs baseline 0001_main: bm25 score 0.860 -> 0.610 (-0.250): "
        "regression p=0.002 (one-sided paired t-test over 24 questions (t(23)), Holm) < alpha 0.05",
        "pass  --lens-compare-fail [suite mab]: no significant regression vs baseline 0001_main (alpha 0.05; 1 adapter(s) compared)",
    ]
    # With LENS questions in the run, LENS's gate stays, first.
    with_lens = check_gates(
        {"bm25": summary("bm25", 0.86)}, DEFAULT_GATES, policy, comparison(0.0, 1.0, "no significant change"), suite_comparisons=suites
    )
    assert [check.gate for check in with_lens[1:]] == [
        "--lens-compare-fail",
        "--lens-compare-fail [suite meme]",
        "--lens-compare-fail [suite mab]",
    ]
    # Nothing compared at all still fails: a gate that checked nothing must not pass.
    (_, nothing) = check_gates({}, DEFAULT_GATES, policy, None)
    assert not nothing.passed


def _bounded(drop_bound: float, mde: float = 0.031) -> BaselineComparison:
    found = comparison(-0.01, 0.2, "no significant change")
    entry = found.adapters[0]
    assert entry.regression is not None
    test = entry.regression.model_copy(update={"drop_bound": drop_bound, "mde": mde})
    inferior = drop_bound > 0.02
    return found.model_copy(update={"adapters": [entry.model_copy(update={"regression": test, "inferior": inferior})], "margin": 0.02})


def test_non_inferiority_gate_prints_the_bound_and_what_the_run_can_detect() -> None:
    policy = GatePolicy(compare_fail=True, margin=0.02)
    passed = check_gates({"bm25": summary("bm25", 0.84)}, DEFAULT_GATES, policy, _bounded(0.015))[-1]
    assert passed.passed
    assert "non-inferior vs baseline 0001_main: bm25 drop at most 0.015 <= --lens-margin=0.02 (one-sided 95% bound" in passed.line
    assert "this run can detect a drop of 0.031 or more (bm25) (alpha 0.05, 80% power)" in passed.line
    failed = check_gates({"bm25": summary("bm25", 0.84)}, DEFAULT_GATES, policy, _bounded(0.045))[-1]
    assert not failed.passed
    assert "drop could be as large as 0.045 (one-sided 95% bound) > --lens-margin=0.02" in failed.line
