"""Retrieval metrics and evidence precision: hand-checked values, chance levels, and a worse ranking scoring lower."""

from __future__ import annotations

import math
from itertools import permutations

import pytest

from pytest_lens.records.results import ToolCallRecord
from pytest_lens.scoring.retrieval import RetrievalEvidence, expected_ndcg, retrieval_metrics, search_rankings

STORED = [f"e{i}" for i in range(1, 21)]


def metrics_for(
    *searches: list[str], required: tuple[str, ...] = ("e1", "e2", "e3"), cited: tuple[str, ...] = (), **extra: object
) -> dict[str, float]:
    grounded = extra.pop("grounded", {ref for ref in cited if any(ref in s for s in searches)})
    return retrieval_metrics(
        RetrievalEvidence(list(searches), list(required), STORED, list(cited), grounded, **extra)  # type: ignore[arg-type]
    )


def dcg(ranks: list[int]) -> float:
    return sum(1 / math.log2(rank + 1) for rank in ranks)


def test_first_search_metrics_on_a_hand_checked_ranking() -> None:
    # Required e1, e2, e3; the first search finds e1 at rank 2 and e2 at rank 7, out of 10 results.
    first = ["e9", "e1", "e8", "e7", "e6", "e5", "e2", "e4", "e10", "e11"]
    metrics = metrics_for(first, ["e3"])
    assert metrics["first_search_ndcg@10"] == pytest.approx(dcg([2, 7]) / dcg([1, 2, 3]))
    assert metrics["first_search_recall@5"] == pytest.approx(1 / 3)
    assert metrics["first_search_recall@10"] == pytest.approx(2 / 3)
    assert metrics["first_search_mrr"] == pytest.approx(1 / 2)
    # The second search found e3: the session found everything, the first search did not.
    assert metrics["session_recall"] == 1.0


def test_a_ranking_that_puts_the_evidence_lower_scores_lower() -> None:
    top = metrics_for(["e1", "e2", "e9", "e8", "e7"])
    lower = metrics_for(["e9", "e8", "e7", "e1", "e2"])
    missed = metrics_for(["e9", "e8", "e7", "e6", "e5"])
    for name in ("first_search_ndcg@10", "first_search_mrr", "first_search_ndcg@10_above_chance"):
        assert top[name] > lower[name] > missed[name]
    assert top["first_search_recall@5"] == lower["first_search_recall@5"] == 2 / 3 > missed["first_search_recall@5"] == 0


def test_a_ref_returned_twice_counts_once_at_its_best_rank() -> None:
    assert metrics_for(["e9", "e1", "e1", "e1"]) == metrics_for(["e9", "e1"])


def test_no_search_and_an_empty_search_rank_nothing() -> None:
    for metrics in (metrics_for(), metrics_for([])):
        assert {name: metrics[name] for name in metrics if name.startswith(("first_search", "session"))} == {
            "first_search_ndcg@10": 0.0,
            "first_search_recall@5": 0.0,
            "first_search_recall@10": 0.0,
            "first_search_mrr": 0.0,
            "session_recall": 0.0,
            # Returning nothing is not below chance: a random memory returning nothing finds nothing either.
            "first_search_ndcg@10_above_chance": 0.0,
            "session_recall_above_chance": 0.0,
        }


def test_without_required_evidence_there_is_nothing_to_rank() -> None:
    assert metrics_for(["e1"], required=()) == {}


def test_above_chance_subtracts_what_as_many_random_episodes_would_find() -> None:
    metrics = metrics_for(["e1", "e9", "e8", "e7"], required=("e1", "e2"))
    assert metrics["session_recall_above_chance"] == pytest.approx(1 / 2 - 4 / 20)
    assert metrics["first_search_ndcg@10_above_chance"] == pytest.approx(
        metrics["first_search_ndcg@10"] - (2 / 20) * dcg([1, 2, 3, 4]) / dcg([1, 2])
    )


@pytest.mark.parametrize(("population", "relevant", "returned"), [(6, 2, 3), (5, 3, 5), (7, 1, 4)])
def test_expected_ndcg_is_the_mean_over_every_random_ranking(population: int, relevant: int, returned: int) -> None:
    # Exact: trec_eval's nDCG@10 averaged over every ordered draw of `returned` episodes from the population.
    stored = [f"e{i}" for i in range(population)]
    required = stored[:relevant]
    values = [
        retrieval_metrics(RetrievalEvidence([list(draw)], required, stored, [], set()))["first_search_ndcg@10"]
        for draw in permutations(stored, returned)
    ]
    assert expected_ndcg(10, returned, relevant, population) == pytest.approx(sum(values) / len(values), abs=1e-9)


def test_evidence_precision_and_f1() -> None:
    # Cited: e1 (required, returned), e9 (returned, not required), e2 (required but never returned: not evidence).
    metrics = metrics_for(["e1", "e9"], cited=("e1", "e9", "e2"), grounded={"e1", "e9"})
    precision, coverage = 1 / 3, 1 / 3  # coverage: e1 of e1, e2, e3 (e2 was not grounded)
    assert metrics["evidence_precision"] == pytest.approx(precision)
    assert metrics["evidence_f1"] == pytest.approx(2 * precision * coverage / (precision + coverage))


def test_nothing_cited_has_no_precision_and_zero_f1() -> None:
    metrics = metrics_for(["e1"])
    assert "evidence_precision" not in metrics
    assert metrics["evidence_f1"] == 0.0


def test_signal_precision_counts_cited_labelled_episodes_only() -> None:
    labels = {"e1": True, "e2": True, "e5": False, "e6": False}
    metrics = metrics_for(["e1", "e5", "e6", "summary"], cited=("e1", "e5", "e6", "summary"), signal=labels)
    assert metrics["signal_precision"] == pytest.approx(1 / 3)  # "summary" is not an episode
    assert "signal_precision" not in metrics_for(["e1"], cited=("e1",))  # no labels
    assert "signal_precision" not in metrics_for(["e1"], cited=("summary",), signal=labels)  # no labelled episode cited
    # Signal precision needs no required evidence.
    assert metrics_for(["e1"], required=(), cited=("e1",), signal=labels) == {"signal_precision": 1.0}


def test_search_rankings_reads_the_successful_searches_in_order() -> None:
    def call(index: int, name: str, status: str, refs: list[str]) -> ToolCallRecord:
        return ToolCallRecord(index=index, turn=1, name=name, arguments={}, status=status, result_tokens=1, returned_refs=refs)  # type: ignore[arg-type]

    calls = [
        call(1, "memory_capabilities", "ok", []),
        call(2, "memory_search", "error", []),
        call(3, "memory_search", "ok", ["e2", "e1"]),
        call(4, "batch_retrieve", "ok", ["e2"]),
        call(5, "memory_search", "ok", ["e3"]),
    ]
    assert search_rankings(calls) == [["e2", "e1"], ["e3"]]
