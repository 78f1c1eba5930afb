from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_lens.analysis.baseline import compare_with_baseline, compatibility_warnings
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1

UNRECORDED = "not recorded by a run written before comparability cards; not checked"
PROPERTIES = settings(max_examples=25, deadline=None, derandomize=bool(os.environ.get("CI")))
INFO = BaselineInfo(name="0001_main", path=".lens/x/0001_main.json", created="2026-01-01T00:00:00+00:00")
RUN: dict[str, Any] = {
    "agent": {"name": "offline"},
    "judge": None,
    "budgets": [{"name": "16k", "result_token_cap": 16384}],
    "datasets": [{"path": "/data/scope.json", "sha256": "a" * 64}],
    "weights": dict(DEFAULT_WEIGHTS),
    "gates": ["evidence_grounding < 0.5"],
}
IDENTITY = RunIdentity.model_validate(RUN)


def artifact(results: list[QuestionResult], run: RunIdentity | None = None) -> RunArtifact:
    return RunArtifact(pytest_lens_version="0", created=INFO.created, run=run or IDENTITY, results=results, summary={})


def compare(current: list[QuestionResult], previous: list[QuestionResult], **options: Any):  # type: ignore[no-untyped-def]
    return compare_with_baseline(current, IDENTITY, artifact(previous), INFO, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1, **options)


def test_a_run_that_lost_its_evidence_regresses_significantly() -> None:
    healthy = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(12)]
    degraded = [result(f"q{i:02d}", tier1(1.0, 0.0)) for i in range(12)]
    comparison = compare(degraded, healthy, max_drop=0.05)
    [entry] = comparison.adapters
    assert entry.status == "regression" and entry.dropped
    assert entry.regression is not None
    assert entry.regression.alternative == "less"
    assert entry.regression.p_value == pytest.approx(0.5**12)  # exact: all twelve went down
    assert entry.regression.delta.value < -0.05 and entry.regression.effect_size == -1.0
    assert len(entry.largest_drops) == 3 and all(d.delta < 0 for d in entry.largest_drops)
    assert comparison.regressions == [entry]


def test_identical_runs_show_no_significant_change() -> None:
    results = [result(f"q{i}", tier1(1.0, i / 10)) for i in range(10)]
    [entry] = compare(results, results, max_drop=0.0).adapters
    assert entry.status == "no significant change" and not entry.dropped
    assert entry.regression is not None and entry.regression.p_value == 1.0 and entry.regression.delta.value == 0.0
    assert entry.flipped == [] and entry.largest_drops == []


@PROPERTIES
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.6, 1.0]), st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=15))
def test_identical_runs_never_regress(scores: list[tuple[float, float]]) -> None:
    results = [result(f"q{i}", tier1(g, c)) for i, (g, c) in enumerate(scores)]
    comparison = compare(results, [r.model_copy() for r in results], max_drop=0.0)
    assert comparison.regressions == []
    assert all(entry.status == "no significant change" for entry in comparison.adapters)


def test_an_improvement_is_reported_as_such() -> None:
    before = [result(f"q{i:02d}", tier1(1.0, 0.0)) for i in range(8)]
    after = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(8)]
    [entry] = compare(after, before).adapters
    assert entry.status == "improvement" and entry.improvement_p == pytest.approx(0.5**8)


def test_flipped_questions_name_the_state_change() -> None:
    before = [result("q1", tier1(1.0, 1.0)), result("q2", tier1(1.0, 1.0)), result("q3", tier1(0.2, 1.0))]
    after = [result("q1", tier1(0.2, 1.0)), result("q2", tier1(1.0, 1.0), failed=True), result("q3", tier1(1.0, 1.0))]
    [entry] = compare(after, before).adapters
    assert [(f.question_id, f.before, f.after) for f in entry.flipped] == [
        ("q1", "ok", "gated"),
        ("q2", "ok", "failed"),
        ("q3", "gated", "ok"),
    ]


def test_partial_overlap_and_unknown_adapters_are_counted_not_hidden() -> None:
    before = [result("q1", tier1(1, 1)), result("q2", tier1(1, 1)), result("q1", tier1(1, 1), adapter="gone")]
    after = [result("q1", tier1(1, 1)), result("q3", tier1(1, 1)), result("q1", tier1(1, 1), adapter="new")]
    comparison = compare(after, before)
    bm25, new = comparison.adapters
    assert (bm25.regression.n_pairs, bm25.baseline_only, bm25.run_only) == (1, 1, 1)  # type: ignore[union-attr]
    assert new.status == "not compared" and new.regression is None and new.run_only == 1
    assert comparison.missing == ["gone"]


def test_both_runs_are_rescored_with_this_runs_weights() -> None:
    before = [result(f"q{i}", tier1(1.0, 1.0)) for i in range(6)]
    after = [result(f"q{i}", tier1(1.0, 0.0)) for i in range(6)]
    weights = {"evidence_grounding": 1.0}  # coverage no longer counts: nothing changed
    comparison = compare_with_baseline(after, IDENTITY, artifact(before), INFO, weights, DEFAULT_GATES, seed=1)
    assert comparison.adapters[0].status == "no significant change"
    assert comparison.adapters[0].regression.delta.value == 0.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, []),
        ({"datasets": [{"path": "/elsewhere/scope.json", "sha256": "a" * 64}]}, []),
        (
            {"datasets": [{"path": "/data/scope.json", "sha256": "b" * 64}]},
            ["data differs: this run scope.json bbbbbbbbbbbb, baseline scope.json aaaaaaaaaaaa - not comparable"],
        ),
        (
            {"datasets": [{"path": "/data/other.json", "sha256": "c" * 64}]},
            [
                "data differs: this run other.json cccccccccccc, no scope.json, "
                "baseline no other.json, scope.json aaaaaaaaaaaa - not comparable"
            ],
        ),
        (
            {"budgets": [{"name": "8k", "result_token_cap": 8192}]},
            ["budget differs: this run 8k (result_token_cap 8,192), baseline 16k (result_token_cap 16,384) - not comparable"],
        ),
        (
            {"agent": {"name": "llm"}, "llm": {"agent_model": "m", "base_url": "http://127.0.0.1:5/v1"}},
            ["agent differs: this run llm m (local), baseline offline - not comparable"],
        ),
        ({"judge": {"name": "offline"}}, ["judge differs: this run offline, baseline none - not comparable"]),
        ({"seed": 7}, [f"seed differs: this run 7, baseline not recorded ({UNRECORDED})"]),
        (
            {"weights": {"evidence_grounding": 1.0}},
            ["composite weights or hard gates differ from the baseline's; both runs are rescored with this run's"],
        ),
    ],
)
def test_compatibility_warnings(change: dict[str, Any], expected: list[str]) -> None:
    current = RunIdentity.model_validate({**RUN, **change})
    warnings = compatibility_warnings(current.derived_card([]), IDENTITY.derived_card([]), rescored=current.weights != IDENTITY.weights)
    assert warnings == expected


def test_an_accepted_difference_is_still_warned_about_and_recorded_on_the_comparison() -> None:
    results = [result(f"q{i}", tier1(1.0, 1.0)) for i in range(4)]
    judged = RunIdentity.model_validate({**RUN, "judge": {"name": "offline"}})
    comparison = compare_with_baseline(
        results, judged, artifact(results), INFO, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1, accepted=("judge",)
    )
    line = "judge differs: this run offline, baseline none"
    assert comparison.warnings == [f"{line} - compared only because this difference was accepted"]
    assert comparison.accepted_unlike == [line]
    assert compare(results, results).accepted_unlike == []


def test_a_baseline_without_the_headlines_metrics_is_left_out_and_warned_about_not_counted_as_zero() -> None:
    from pytest_lens.scoring.headline import RETRIEVAL_SCORE_WEIGHTS, retrieval_headline

    lifts = dict.fromkeys(RETRIEVAL_SCORE_WEIGHTS, 0.3)
    current = [result(f"q{i:02d}", {**tier1(1.0, 1.0), **lifts}) for i in range(8)]
    old = [result(f"q{i:02d}", tier1(1.0, 1.0)) for i in range(8)]  # saved before the retrieval metrics existed
    run = RunIdentity.model_validate({**RUN, "headline": retrieval_headline().identity()})
    comparison = compare_with_baseline(current, run, artifact(old), INFO, RETRIEVAL_SCORE_WEIGHTS, (), seed=1, score="retrieval_score")
    [entry] = comparison.adapters
    assert entry.regression is None and entry.status == "not compared"  # not a rise from 0 to 0.3
    assert comparison.score == "retrieval_score"
    assert any(w.startswith("headline differs: this run retrieval_score, baseline composite") for w in comparison.warnings)
    # Saved with the metrics, the same questions compare as usual.
    again = compare_with_baseline(current, run, artifact(current, run), INFO, RETRIEVAL_SCORE_WEIGHTS, (), seed=1, score="retrieval_score")
    assert again.adapters[0].status == "no significant change" and again.adapters[0].regression is not None
    assert not any(w.startswith("headline differs") for w in again.warnings)
