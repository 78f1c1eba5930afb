"""The interface adapters keep a store's order and show scores that fall down it, whatever the store's scores mean."""

from __future__ import annotations

import uuid

import pytest

from lens_fixtures.adapters.interfaces.base import StoreScores, merged_results, ranked_results, store_id


def hits(*scores: float | None) -> list[tuple[str, str, float | None, dict[str, str]]]:
    return [(f"ep_{i}", f"text {i}", score, {}) for i, score in enumerate(scores)]


def test_the_stores_order_is_kept_whatever_its_scores_say() -> None:
    # An inverted relevance (FAISS over inner products through LangChain: 1 - similarity) rises down the list.
    results = ranked_results(hits(0.46, 0.50, 0.52, 0.92), 10, StoreScores())
    assert [r.ref_id for r in results] == ["ep_0", "ep_1", "ep_2", "ep_3"]
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


@pytest.mark.parametrize(
    ("scores", "shown"),
    [
        ((0.9, 0.5, 0.5, 0.1), [0.9, 0.5, 0.5, 0.1]),  # a similarity: as the store gave it
        ((0.0, 1.0, 3.0), [1.0, 0.5, 0.25]),  # a distance: 1 / (1 + d)
        ((0.9, 0.1, 0.5), [1.0, 0.5, 1 / 3]),  # neither: by rank
        ((None, 0.2), [1.0, 0.5]),  # a hit without a score: by rank
    ],
    ids=["similarity", "distance", "unordered", "unscored"],
)
def test_scores_fall_down_the_stores_order(scores: tuple[float | None, ...], shown: list[float]) -> None:
    results = ranked_results(hits(*scores), 10, StoreScores())
    assert [r.score for r in results] == pytest.approx(shown, abs=1e-6)


def test_a_list_that_shows_no_direction_takes_the_one_the_store_showed_before() -> None:
    scores = StoreScores()
    assert scores.shown([0.0, 1.0]) == [1.0, 0.5]  # a distance, learned
    assert scores.shown([3.0]) == [0.25]  # one hit: still a distance, not 3.0
    assert StoreScores().shown([3.0]) == [3.0]  # a store not seen yet: as given
    scores.shown([0.9, 0.1, 0.5])
    assert scores.unordered == 1


def test_one_result_per_ref_at_most_limit_and_merging_sorts_by_its_own_score() -> None:
    results = ranked_results([("a", "", 0.9, {}), ("a", "", 0.8, {}), ("b", "", 0.7, {}), ("c", "", 0.6, {})], 2, StoreScores())
    assert [r.ref_id for r in results] == ["a", "b"]
    merged = merged_results([("a", "", 0.5, {}), ("b", "", 1.0, {}), ("c", "", 0.5, {})], 10)
    assert [(r.ref_id, r.score) for r in merged] == [("b", 1.0), ("a", 0.5), ("c", 0.5)]


def test_store_ids_are_stable_uuids() -> None:
    assert store_id("ep_001") == store_id("ep_001") != store_id("ep_002")
    assert uuid.UUID(store_id("ep_001")).version == 5
