from __future__ import annotations

import pytest

from lens_fixtures.adapters.fusion import reciprocal_rank_fusion, score_fusion


def test_plain_rrf_sums_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "embedding": ["c", "a", "d"]}, k=60)
    scores = {item.key: item.score for item in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)  # absent from a ranking: nothing from it
    assert scores["d"] == pytest.approx(1 / 63)
    assert [item.key for item in fused] == ["a", "c", "b", "d"]
    assert fused[0].ranks == {"bm25": 1, "embedding": 2}


def test_agreement_beats_a_single_first_place() -> None:
    fused = reciprocal_rank_fusion({"x": ["solo", "both"], "y": ["other", "both"]}, k=60)
    assert fused[0].key == "both"


def test_cognis_weighted_form_with_missing_ranks_and_scale() -> None:
    fused = reciprocal_rank_fusion(
        {"vector": ["v1", "shared"], "bm25": ["shared", "b1"]},
        k=10,
        weights={"vector": 0.7, "bm25": 0.3},
        missing_rank={"vector": 3, "bm25": 3},
        scale=11,
    )
    scores = {item.key: item.score for item in fused}
    assert scores["v1"] == pytest.approx(0.7 * 11 / 11 + 0.3 * 11 / 13)
    assert scores["shared"] == pytest.approx(0.7 * 11 / 12 + 0.3 * 11 / 11)
    assert scores["b1"] == pytest.approx(0.7 * 11 / 13 + 0.3 * 11 / 12)
    assert [item.key for item in fused] == ["v1", "shared", "b1"]  # 0.954 > 0.942 > 0.867
    assert reciprocal_rank_fusion({"v": ["only"]}, k=10, scale=11)[0].score == pytest.approx(1.0)


def test_ties_keep_first_appearance_and_duplicates_count_once_at_their_best_rank() -> None:
    fused = reciprocal_rank_fusion({"a": ["p", "q"], "b": ["q", "p"]}, k=60)
    assert [item.key for item in fused] == ["p", "q"]
    duplicate = reciprocal_rank_fusion({"a": ["p", "p", "q"]}, k=60)
    assert duplicate[0].score == pytest.approx(1 / 61)
    assert duplicate[1].ranks == {"a": 3}


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="k must be positive"):
        reciprocal_rank_fusion({"a": ["x"]}, k=0)
    with pytest.raises(ValueError, match="not given"):
        reciprocal_rank_fusion({"a": ["x"]}, weights={"b": 1.0})
    assert reciprocal_rank_fusion({}, k=60) == []


def test_score_fusion_z_scores_each_leg_over_every_item_either_scored() -> None:
    import numpy as np

    legs = {"bm25": {"a": 6.0, "b": 2.0}, "dense": {"a": 0.1, "b": 0.5, "c": 0.9}}
    fused = score_fusion(legs, {"bm25": 0.6, "dense": 0.4}, absent={"bm25": 0.0})
    keyword, dense = np.array([6.0, 2.0, 0.0]), np.array([0.1, 0.5, 0.9])
    z = 0.6 * (keyword - keyword.mean()) / keyword.std() + 0.4 * (dense - dense.mean()) / dense.std()
    scores = {item.key: item.score for item in fused}
    assert [scores[k] for k in "abc"] == pytest.approx(list(z))
    assert [item.key for item in fused] == ["a", "c", "b"]  # a: the keyword leg's clear winner
    assert fused[1].ranks == {"dense": 1}
    # A leg that cannot tell its items apart adds nothing; min-max maps each leg to [0, 1].
    flat = score_fusion({"x": {"a": 1.0, "b": 1.0}, "y": {"a": 0.0, "b": 2.0}}, {"x": 0.9, "y": 0.1})
    assert [item.key for item in flat] == ["b", "a"]
    minmax = score_fusion(legs, {"bm25": 0.5, "dense": 0.5}, absent={"bm25": 0.0}, normalisation="minmax")
    assert {item.key: item.score for item in minmax} == pytest.approx({"a": 0.5, "b": 0.5 * 2 / 6 + 0.25, "c": 0.5})
    assert score_fusion({"x": {}}, {}) == []
    with pytest.raises(ValueError, match="normalisation must be one of zscore, minmax"):
        score_fusion(legs, {}, normalisation="rank")
    with pytest.raises(ValueError, match=r"name legs that are not given: \['z'\]"):
        score_fusion(legs, {"z": 1.0})


def test_with_confidence_a_leg_counts_as_much_as_its_best_item_stands_out() -> None:
    legs = {"sure": {"a": 10.0, "b": 0.0, "c": 0.0}, "flat": {"a": 0.0, "b": 1.0, "c": 0.9}}
    assert score_fusion(legs, {"sure": 0.3, "flat": 0.7})[0].key == "b"  # fixed weights: the heavier leg wins
    assert score_fusion(legs, {"sure": 0.3, "flat": 0.7}, confidence=True)[0].key == "a"  # its one clear match
