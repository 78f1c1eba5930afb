"""Sibling suites' statistics: CIs of the score each section shows, paired tests, baseline comparisons."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.suites.base import summarize_suite
from pytest_lens.suites.mab.suite import MAB_SUITE
from pytest_lens.suites.meme.suite import CREDIT, MEME_SUITE, credited_probes, meme_metrics
from pytest_lens.suites.selection import SuiteRun
from tests.unit.suites.meme.test_suite import result as probe
from tests.unit.suites.meme.test_suite import run as meme_run

TASKS = ("exact_recall", "aggregation", "tracking", "deletion", "cascade", "absence")

#: A run identity with nothing recorded (the comparison only warns from it).
NO_RUN = RunIdentity()


def meme_results(outcomes: list[tuple[int, bool, bool]], adapter: str = "bm25") -> list[QuestionResult]:
    """One entity per outcome: (task index, before-probe passed, after-probe passed)."""
    results = []
    for i, (task, before, after) in enumerate(outcomes):
        name = TASKS[task]
        results.append(probe(f"q{i}_before", name, "before", f"e{i}", before, adapter=adapter))
        results.append(probe(f"q{i}_after", name, "after", f"e{i}", after, adapter=adapter))
    return results


def mab_result(qid: str, competency: str, score: float, adapter: str = "bm25") -> QuestionResult:
    return probe(qid, competency, "after", qid, bool(score), adapter=adapter).model_copy(
        update={"suite": "mab", "metrics": {"mab_score": score}, "scorer_details": {}}
    )


def test_credited_probes_carry_the_trivial_pass_filter() -> None:
    credited = {r.question_id: r.metrics[CREDIT] for r in credited_probes(meme_run())}
    # c2a passed trivially, d1a has no before-probe: neither is credited; before-probes are not scored.
    assert credited == {"c1a": 1.0, "c2a": 0.0, "a1a": 0.0, "a2a": 0.0, "d1a": 0.0, "er": 1.0, "tr": 0.0, "agg": 1.0}


outcomes = st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.booleans()), min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(outcomes)
def test_the_statistics_point_estimate_is_the_score_the_section_shows(found: list[tuple[int, bool, bool]]) -> None:
    results = meme_results(found)
    statistics = SuiteRun({"meme": MEME_SUITE}).statistics(results, seed=1)
    shown = summarize_suite(MEME_SUITE, results)["bm25"].composite
    estimate = statistics["meme"].adapters["bm25"].composite
    assert estimate.value == pytest.approx(shown, abs=1e-6)
    assert estimate.value == pytest.approx(meme_metrics(results)["meme_overall"], abs=1e-6)
    if estimate.low is not None and estimate.high is not None:
        assert estimate.low - 1e-9 <= estimate.value <= estimate.high + 1e-9


def test_each_task_keeps_its_probes_in_every_resample() -> None:
    # Every task all-pass or all-fail: resampling within tasks cannot move the mean over tasks.
    results = meme_results([(0, True, True)] * 4 + [(4, True, False)] * 8 + [(5, False, True)] * 3)
    estimate = SuiteRun({"meme": MEME_SUITE}).statistics(results, seed=1)["meme"].adapters["bm25"].composite
    assert (estimate.value, estimate.low, estimate.high) == (pytest.approx(1 / 3), pytest.approx(1 / 3), pytest.approx(1 / 3))


def test_paired_tests_compare_credited_probes_not_raw_passes() -> None:
    # Both adapters pass every Cascade after-probe; only "real" knew the value before the change.
    real = meme_results([(4, True, True)] * 8, adapter="real")
    trivial = meme_results([(4, False, True)] * 8, adapter="trivial")
    statistics = SuiteRun({"meme": MEME_SUITE}).statistics(real + trivial, seed=1)["meme"]
    (pair,) = statistics.pairs
    assert (pair.first, pair.second) == ("real", "trivial")
    test = pair.composite
    assert (test.n_pairs, test.n_down, test.first, test.second) == (8, 8, 1.0, 0.0)
    assert test.p_adjusted < 0.01
    assert {t.metric: t.delta.value for t in pair.metrics}["meme_pass"] == 0.0  # the raw passes do not differ


def test_mab_statistics_leave_out_within_competencies() -> None:
    results = [mab_result(f"ar{i}", "accurate_retrieval", 1.0) for i in range(6)]
    results += [mab_result(f"lru{i}", "long_range_understanding", float(i == 0)) for i in range(3)]
    statistics = SuiteRun({"mab": MAB_SUITE}).statistics(results, seed=1)["mab"]
    estimate = statistics.adapters["bm25"].composite
    assert estimate.value == pytest.approx(summarize_suite(MAB_SUITE, results)["bm25"].composite)
    # The stratified jackknife: AR never varies, so the spread is LRU's alone (the standard error of its mean, 1/3,
    # halved by the mean over two competencies), with 9 questions - 2 competencies degrees of freedom.
    assert estimate.low is not None and estimate.high is not None
    assert estimate.se == pytest.approx(1 / 6, abs=1e-6) and estimate.df == 7
    assert estimate.high - estimate.value == pytest.approx(estimate.value - estimate.low)
    assert {t: e.value for t, e in statistics.adapters["bm25"].by_type.items()} == pytest.approx(
        {"accurate_retrieval": 1.0, "long_range_understanding": 1 / 3}
    )


def artifact(results: list[QuestionResult]) -> RunArtifact:
    return RunArtifact(pytest_lens_version="t", created="t", run={}, results=results, summary={})


def test_a_suite_is_compared_with_the_baseline_only_when_the_baseline_has_it() -> None:
    info = BaselineInfo(name="main", path="main.json", created="")
    healthy = meme_results([(4, True, True)] * 8 + [(0, True, True)] * 4)
    broken = meme_results([(4, True, False)] * 8 + [(0, True, True)] * 4)
    suites = SuiteRun({"meme": MEME_SUITE})
    (found,) = suites.comparisons(broken, NO_RUN, artifact(healthy), info, alpha=0.05, max_drop=None, seed=1).values()
    (entry,) = found.adapters
    assert entry.status == "regression" and entry.regression is not None
    assert (entry.regression.first, entry.regression.second, entry.regression.n_down) == (1.0, 0.5, 8)
    assert suites.comparisons(healthy, NO_RUN, artifact(healthy), info, alpha=0.05, max_drop=None, seed=1)["meme"].adapters[0].status == (
        "no significant change"
    )
    lens_only = [r.model_copy(update={"suite": "lens"}) for r in healthy]
    assert suites.comparisons(broken, NO_RUN, artifact(lens_only), info, alpha=0.05, max_drop=None, seed=1) == {}
