from __future__ import annotations

import pytest

from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.format import format_estimate, format_p
from pytest_lens.analysis.run import analyze_run
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import RunArtifact
from pytest_lens.records.statistics import BaselineInfo, Estimate
from pytest_lens.reports.render import (
    ASCII_ARROWS,
    UNICODE_ARROWS,
    arrows_for,
    comparison_lines,
    line_markup,
    metric_interval_lines,
    pair_lines,
)
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1


@pytest.mark.parametrize(
    ("line", "markup"),
    [
        ("LENS verdict: FAIL - --lens-compare-fail: ...", {"red": True, "bold": True}),
        ("LENS verdict: PASS", {"green": True}),
        ("  FAIL  --lens-fail-under=0.9: bm25 composite 0.813 < 0.9", {"red": True}),
        ("  pass  hard gates (...): no adapter gated (1 checked)", {}),
        ("bm25     32     0.860     0.838  -0.022 [-0.043, -0.005]     0.016     -1.00    6▼ 0▲  ▼ regression", {"red": True}),
        ("bm25     32     0.760     0.838  +0.078 [+0.043, +0.105]     0.016     +1.00    0v 6^  ^ improvement", {"green": True}),
        ("bm25     32     0.860     0.860  +0.000 [+0.000, +0.000]     1.000     +0.00    0▼ 0▲  no significant change", {}),
        (
            "bm25  8  1.000  0.948  -0.052  0.125  -1.00  3▼ 0▲  ▼ drop over --lens-max-drop (no significant change)",
            {"red": True},
        ),
    ],
)
def test_line_markup(line: str, markup: dict[str, bool]) -> None:
    assert line_markup(line) == markup


def test_arrows_fall_back_to_ascii_when_the_encoding_cannot_show_them() -> None:
    assert arrows_for("utf-8") == UNICODE_ARROWS
    assert arrows_for("ascii") == ASCII_ARROWS
    assert arrows_for(None) == ASCII_ARROWS
    assert arrows_for("no-such-codec") == ASCII_ARROWS


def test_formats() -> None:
    assert format_estimate(Estimate(value=0.8125, low=0.79, high=0.8361, n=24)) == "0.812 [0.790, 0.836]"
    assert format_estimate(Estimate(value=0.758, n=1)) == "0.758"
    assert (format_p(0.015625), format_p(0.0004), format_p(1.0)) == ("0.016", "4.0e-04", "1.000")


def test_run_tables_show_intervals_pairs_and_effect_sizes() -> None:
    good = [result(f"q{i:02d}", tier1(1.0, 1.0), adapter="good") for i in range(8)]
    bad = [result(f"q{i:02d}", tier1(1.0, 0.0), adapter="bad") for i in range(8)]
    analysis = analyze_run(good + bad, DEFAULT_WEIGHTS, DEFAULT_GATES)
    metric_lines = metric_interval_lines(analysis)
    assert metric_lines[0] == "metric means with 95% t intervals (over the questions, t(n - 1)):"
    assert metric_lines[1].split() == ["metric", "good", "bad"]
    assert metric_lines[3].split()[:2] == ["ev.coverage", "1.000"]
    lines = pair_lines(analysis, alpha=0.05, arrows=ASCII_ARROWS)
    assert lines[0].startswith("adapters compared (paired by question; two-sided paired t-test over 8 questions (t(7)) of the mean")
    row = lines[2].split()
    assert row[:4] == ["good", "vs", "bad", "8"]
    # Every question fell alike: no spread for a t statistic, the exact sign-flip p = 2 / 2**8.
    assert row[-7:] == ["0.008", "-1.00", "8v", "0^", "v", "bad", "lower"]
    # Four metric tests form one Holm family: coverage's 2/2**8 becomes 4 * 2/2**8.
    assert lines[3] == "  good vs bad metrics (Holm p < 0.05): ev.coverage v -1.000 (p=0.031)"


def test_comparison_lines_explain_small_samples_drops_and_flips() -> None:
    before = [result(f"q{i}", tier1(1.0, 1.0)) for i in range(4)]
    after = [result("q0", tier1(0.2, 1.0)), *(result(f"q{i}", tier1(1.0, 0.5)) for i in range(1, 3)), result("q3", tier1(1.0, 1.0))]
    info = BaselineInfo(name="0001_main", path=".lens/m/0001_main.json", created="2026-01-01", commit="0123456789abcdef", machine="m")
    artifact = RunArtifact(pytest_lens_version="0", created="c", run={}, results=before, summary={})
    run = RunIdentity.model_validate({"agent": {"name": "offline"}})
    comparison = compare_with_baseline(after, run, artifact, info, DEFAULT_WEIGHTS, DEFAULT_GATES)
    lines = comparison_lines(comparison, gating=False)
    assert lines[0] == "compared with baseline 0001_main (.lens/m/0001_main.json; saved 2026-01-01, commit 0123456789, m)"
    unrecorded = "not recorded by a run written before comparability cards; not checked"
    assert f"  warning: agent differs: this run offline, baseline not recorded ({unrecorded})" in lines
    row = next(line for line in lines if line.startswith("bm25 "))
    # Adapter composites over metric means: grounding 0.8 (not gated), coverage 0.75 -> 0.294 / 0.33. The t-test of
    # that drop (one-sided, t(3)) finds it; the signed-rank test, beside it, could not go below 1/8 with 3 changes.
    assert row.split()[1:4] == ["4", "1.000", "0.891"] and row.endswith("regression")
    assert row.split()[4:7] == ["-0.109", "[-0.237,", "+0.019]"]
    assert (
        "  bm25: 3 question(s) fell, 0 rose (Wilcoxon signed-rank, one-sided p=0.125: which way questions moved, "
        "not by how much; not the gate's test)" in lines
    )
    assert "  bm25: largest drops: q0 -1.000, q1 -0.121, q2 -0.121" in lines
    assert "  bm25: flipped: q0 ok→gated" in lines
    assert lines[-1] == "  (this comparison does not gate the run; add --lens-compare-fail to fail on a regression)"
