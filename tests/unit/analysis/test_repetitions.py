"""Repeated answers: per-question means, the variance split, and CIs that do not count repetitions as questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.analysis.repetitions import (
    RepetitionSection,
    collapse_repetitions,
    repetition_variance,
    summarize_repeated,
    variance_split,
)
from pytest_lens.analysis.run import analyze_run
from pytest_lens.analysis.summary import summarize
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.repetition import at_repetition, current_repetition, repetition_seed
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.results import QuestionResult, Violation
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1


def answers(question_id: str, coverages: list[float], **options: str) -> list[QuestionResult]:
    """One result per repetition of a question, with the given evidence coverage each time."""
    return [
        result(question_id, tier1(1.0, coverage), **options).model_copy(update={"repetition": index})  # type: ignore[arg-type]
        for index, coverage in enumerate(coverages)
    ]


def test_variance_split_matches_a_hand_computed_anova() -> None:
    split = variance_split([[1.0, 3.0], [5.0, 7.0]])
    # Question means 2 and 6 (grand mean 4): within SS = 1+1+1+1 = 4 over 4-2 dof; between SS = 2*4 + 2*4 = 16.
    assert split.within == pytest.approx(2.0)
    assert split.between == pytest.approx(8.0)  # variance of the means 2 and 6
    assert split.share == pytest.approx(4 / 20)
    assert variance_split([[0.5, 0.5], [0.5, 0.5]]).share is None  # no variance at all: no share to speak of
    assert variance_split([[0.0, 1.0], [0.0, 1.0]]).share == pytest.approx(1.0)  # all of it is repetition


def test_collapse_averages_each_question_and_keeps_single_answers() -> None:
    repeated = answers("q1", [0.0, 0.5, 1.0]) + answers("q2", [1.0, 1.0, 1.0])
    repeated[1] = repeated[1].model_copy(update={"violations": [Violation(kind="turns", detail="x")], "result_tokens": 30})
    merged = collapse_repetitions(repeated, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert [r.question_id for r in merged] == ["q1", "q2"]
    assert merged[0].metrics["evidence_coverage"] == pytest.approx(0.5)
    assert merged[1].metrics["evidence_coverage"] == 1.0
    assert len(merged[0].violations) == 1 and merged[0].result_tokens == 10
    single = answers("q3", [0.2])
    assert collapse_repetitions(single, DEFAULT_WEIGHTS, DEFAULT_GATES) == single


def test_answers_not_measured_are_left_out_of_their_question_and_of_the_variance() -> None:
    q1 = answers("q1", [0.0, 1.0, 1.0])
    down = {"metrics": {}, "composite": 0.0, "gated": False, "not_measured": "model down"}
    q1[0] = q1[0].model_copy(update=down)
    q2 = [r.model_copy(update=down) for r in answers("q2", [1.0, 1.0])]
    merged = collapse_repetitions(q1 + q2, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert merged[0].measured and merged[0].metrics["evidence_coverage"] == 1.0  # the two measured answers, not a 0 for the third
    assert not merged[1].measured  # no answer measured: the question is not measured
    (variance,) = repetition_variance(q1 + q2, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert (variance.questions, variance.answers) == (1, 2)
    assert variance.composite.share is None  # both measured answers agree


def test_a_metric_absent_in_some_repetitions_is_averaged_where_present() -> None:
    first, second = answers("q1", [1.0, 0.0])
    first = first.model_copy(update={"metrics": {**first.metrics, "answer_quality": 1.0}})
    (merged,) = collapse_repetitions([first, second], DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert merged.metrics["answer_quality"] == 1.0  # the judge failed on the other repetition: absent, not 0


def test_summary_counts_questions_and_averages_their_means() -> None:
    repeated = answers("q1", [0.0, 1.0, 1.0]) + answers("q2", [0.0, 0.0, 0.0])
    (summary,) = summarize_repeated(repeated, DEFAULT_WEIGHTS, DEFAULT_GATES).values()
    assert summary.n_questions == 2 and summary.repetitions == 3
    assert summary.metrics["evidence_coverage"] == pytest.approx((2 / 3 + 0.0) / 2)
    plain = summarize(collapse_repetitions(repeated, DEFAULT_WEIGHTS, DEFAULT_GATES), DEFAULT_WEIGHTS, DEFAULT_GATES)["bm25"]
    assert summary.composite == plain.composite


def test_cluster_bootstrap_ci_is_the_per_question_ci_while_a_naive_one_would_be_narrower() -> None:
    """Deterministic answers repeated three times carry no more information than one answer per question."""
    coverages = [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.9, 1.0, 0.3, 0.8]
    once = [r for i, c in enumerate(coverages) for r in answers(f"q{i}", [c])]
    thrice = [r for i, c in enumerate(coverages) for r in answers(f"q{i}", [c, c, c])]

    def width(results: list[QuestionResult]) -> float:
        estimate = analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1).adapters["bm25"].composite
        assert estimate.low is not None and estimate.high is not None
        return estimate.high - estimate.low

    ours = width(collapse_repetitions(thrice, DEFAULT_WEIGHTS, DEFAULT_GATES))
    assert ours == pytest.approx(width(once))
    naive = width(thrice)  # the mistake: 30 "questions"
    assert naive < 0.75 * ours  # ~1/sqrt(3) of it


def test_paired_tests_pair_questions_not_answers() -> None:
    first = [r for i in range(6) for r in answers(f"q{i}", [0.2, 0.4, 0.3])]
    second = [r for i in range(6) for r in answers(f"q{i}", [0.9, 0.7, 0.8], adapter="other")]
    merged = collapse_repetitions(first + second, DEFAULT_WEIGHTS, DEFAULT_GATES)
    (pair,) = analyze_run(merged, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1).pairs
    assert pair.composite.n_pairs == 6


def test_repetition_variance_reports_each_adapter_and_metric() -> None:
    steady = [r for i in range(4) for r in answers(f"q{i}", [i / 4] * 3)]
    noisy = [r for i in range(4) for r in answers(f"q{i}", [0.0, 1.0, 0.5], adapter="noisy")]
    found = {v.adapter: v for v in repetition_variance(steady + noisy, DEFAULT_WEIGHTS, DEFAULT_GATES)}
    assert found["bm25"].composite.share == 0.0 and found["bm25"].questions == 4 and found["bm25"].answers == 12
    assert found["noisy"].composite.share == pytest.approx(1.0)  # every question alike, every answer different
    assert found["noisy"].metrics["evidence_grounding"].share is None  # grounding never moved
    lines = RepetitionSection(list(found.values())).lines
    assert "share from repetition" in lines[1]
    assert any(line.split()[0] == "noisy" and line.endswith("100%") for line in lines)
    assert "ev.coverage 100%" in lines[-1]
    assert repetition_variance(answers("q1", [0.5]), DEFAULT_WEIGHTS, DEFAULT_GATES) == []


def test_repetition_seeds_are_distinct_and_repetition_zero_keeps_the_run_seed() -> None:
    assert repetition_seed(42, 0) == 42
    seeds = {repetition_seed(42, index) for index in range(1, 50)}
    assert len(seeds) == 49 and 42 not in seeds and all(0 <= s < 2**31 for s in seeds)
    assert repetition_seed(42, 1) != repetition_seed(43, 0)
    assert current_repetition() == 0
    with at_repetition(2):
        assert current_repetition() == 2
    assert current_repetition() == 0


def test_each_repetition_is_its_own_request_and_cache_entry(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        cache = RequestCache(tmp_path / "cache.sqlite", "record")
        client = ChatClient(LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY"), "scripted", cache=cache, stats=LLMStats(), seed=7)
        hello = [{"role": "user", "content": "hello"}]
        for index in (0, 1, 2, 1):
            with at_repetition(index):
                client.complete(hello)
        assert [request.body["seed"] for request in server.requests] == [7, repetition_seed(7, 1), repetition_seed(7, 2)]
        assert client.stats.snapshot().cache_hits == 1  # repetition 1 again: replayed
        replay = ChatClient(
            LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY"),
            "scripted",
            cache=RequestCache(tmp_path / "cache.sqlite", "replay"),
            stats=LLMStats(),
            seed=7,
        )
        with at_repetition(2):
            assert replay.complete(hello).cached
        assert server.count() == 3
