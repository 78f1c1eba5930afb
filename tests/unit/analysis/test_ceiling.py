"""The floor and the ceiling: each adapter's share of the range between random and the oracle, losses and suspects."""

from __future__ import annotations

import pytest

from pytest_lens.analysis.ceiling import FAILS_BELOW, ceiling
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import ControlRole
from tests.unit.analysis.factory import result

ROLES = {"random": ControlRole("random"), "oracle": ControlRole("oracle"), "null": ControlRole("null")}


def scored(adapter: str, scores: list[float]) -> list[QuestionResult]:
    return [
        result(f"q{index}", {"score": value}, adapter=adapter).model_copy(update={"control": ROLES.get(adapter)})
        for index, value in enumerate(scores)
    ]


def score(r: QuestionResult) -> float | None:
    return r.metrics.get("score")


ORACLE = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.2, 0.0]  # the last two: even the oracle fails them
RANDOM = [0.2, 0.1, 0.0, 0.3, 0.2, 0.1, 0.0, 0.0]


def test_each_adapter_between_the_floor_and_the_ceiling_with_its_losses() -> None:
    good = [0.9, 1.0, 0.8, 1.0, 0.9, 1.0, 0.0, 0.1]
    poor = [0.2, 0.0, 0.4, 0.1, 0.0, 0.3, 0.1, 0.0]
    results = [*scored("good", good), *scored("poor", poor), *scored("random", RANDOM), *scored("oracle", ORACLE)]
    found = ceiling(results, score, metric="retrieval_score")
    assert found is not None and (found.oracle, found.floor, found.fails_below) == ("oracle", "random", FAILS_BELOW)
    rows = {row.adapter: row for row in found.rows}
    assert list(rows) == ["good", "poor"]
    floor, top = sum(RANDOM) / 8, sum(ORACLE) / 8
    assert found.floor_scores == {"16k": pytest.approx(floor)} and found.oracle_scores == {"16k": pytest.approx(top)}
    share = rows["good"].share
    assert share is not None and share.value == pytest.approx((sum(good) / 8 - floor) / (top - floor), abs=1e-6)
    assert share.low is not None and share.high is not None and share.low <= share.value <= share.high
    poor_share = rows["poor"].share
    assert poor_share is not None and poor_share.high is not None and share.low is not None and poor_share.high < share.low
    # Losses count only what the oracle passes: the poor memory fails six such questions, the good one none.
    assert (rows["good"].memory_losses, rows["poor"].memory_losses) == (0, 6)
    assert [(s.question_id, s.score) for s in found.suspects] == [("q6", 0.2), ("q7", 0.0)]
    assert found.oracle_questions == {"16k": 8}


def test_no_oracle_no_ceiling_and_no_floor_means_zero() -> None:
    assert ceiling(scored("good", [1.0, 0.5]), score, metric="m") is None
    found = ceiling([*scored("good", [1.0, 0.5, 0.0]), *scored("oracle", [1.0, 1.0, 1.0])], score, metric="m")
    assert found is not None and found.floor is None and found.floor_scores == {"16k": 0.0}
    (row,) = found.rows
    assert row.share is not None and row.share.value == pytest.approx(0.5)
    # An oracle no better than the floor leaves no range to share: no share, never a division by zero.
    flat = ceiling([*scored("good", [0.5, 0.5]), *scored("random", [1.0, 1.0]), *scored("oracle", [1.0, 1.0])], score, metric="m")
    assert flat is not None and flat.rows[0].share is None
    # Without --lens-controls, the adapter labelled random is the floor.
    plain = [r.model_copy(update={"control": None}) for r in scored("random", [0.5, 0.5, 0.5])]
    labelled = ceiling([*scored("good", [1.0, 0.5, 0.0]), *plain, *scored("oracle", [1.0, 1.0, 1.0])], score, metric="m")
    assert labelled is not None and labelled.floor == "random" and labelled.floor_scores == {"16k": 0.5}


def test_questions_without_a_headline_are_left_out() -> None:
    results = [*scored("good", [1.0, 0.0]), *scored("oracle", [1.0, 1.0])]
    results[1] = results[1].model_copy(update={"metrics": {}})  # good's q1: nothing to score
    found = ceiling(results, score, metric="m")
    assert found is not None and found.rows[0].n == 1 and found.rows[0].memory_losses == 0
