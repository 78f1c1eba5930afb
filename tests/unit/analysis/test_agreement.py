"""Judge agreement (``--lens-judge-check``): Cohen's kappa, exact agreement and positional bias of verdict pairs."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_lens.analysis.agreement import judge_agreement, position_lean, verdict_position


def pair(first: str, first_position: str, second: str) -> dict[str, Any]:
    """A comparison graded twice, the candidate in the other position the second time."""
    other = "B" if first_position == "A" else "A"
    return {"first": first, "first_position": first_position, "second": second, "second_position": other}


def agreement(pairs: list[dict[str, Any]]) -> Any:
    return judge_agreement(pairs, answers=3, judge="first", check="second")


def test_a_judge_that_reads_the_content_agrees_with_its_swapped_self() -> None:
    pairs = [
        pair("candidate", "A", "candidate"),
        pair("reference", "B", "reference"),
        pair("tie", "A", "tie"),
        pair("candidate", "B", "candidate"),
    ]
    result = agreement(pairs)
    assert result.kappa == pytest.approx(1.0)
    assert result.agreement == 1.0
    assert result.positional_bias == 0.0
    assert result.positional_comparisons == 3  # the TIE names no position
    assert result.warning is None


def test_a_judge_that_always_answers_a_flips_with_the_positions_and_is_warned_about() -> None:
    # Always "A": the candidate wins where it is shown first and loses where it is shown second.
    shown_first = {"A": "candidate", "B": "reference"}
    shown_second = {"A": "reference", "B": "candidate"}
    pairs = [pair(shown_first[position], position, shown_second[position]) for position in "AABAB"]
    result = agreement(pairs)
    assert result.kappa is not None and result.kappa < 0  # worse than chance: every verdict reversed
    assert result.agreement == 0.0
    assert result.positional_bias == 1.0
    assert result.warning is not None
    assert "below 0.4" in result.warning and "100% of its decided verdicts follow the position" in result.warning


def test_kappa_is_scikit_learns_on_partial_agreement_and_failures_are_left_out() -> None:
    from sklearn.metrics import cohen_kappa_score

    pairs = [
        pair("candidate", "A", "candidate"),
        pair("candidate", "B", "tie"),
        pair("reference", "A", "reference"),
        pair("tie", "B", "candidate"),
    ]
    failed = {"first": "candidate", "first_position": "A", "error": "no usable verdict"}
    result = agreement([*pairs, failed])
    expected = cohen_kappa_score(["candidate", "candidate", "reference", "tie"], ["candidate", "tie", "reference", "candidate"])
    assert result.kappa == pytest.approx(expected)
    assert 0 < result.kappa < 0.4  # chance-level agreement on these four: warned, but not for position
    assert (result.comparisons, result.failed, result.agreement) == (5, 1, 0.5)
    assert result.warning is not None and "position" not in result.warning


def test_one_verdict_throughout_leaves_kappa_undefined_not_a_warning() -> None:
    result = agreement([pair("tie", "A", "tie"), pair("tie", "B", "tie")])
    assert result.kappa is None
    assert result.agreement == 1.0
    assert result.positional_bias is None
    assert result.warning is None
    assert agreement([]).warning == "no comparison was graded by both judges: the judge is unchecked"


def test_verdict_position() -> None:
    assert verdict_position("candidate", "A") == "A"
    assert verdict_position("reference", "A") == "B"
    assert verdict_position("tie", "A") is None
    assert verdict_position("candidate", None) is None


def verdicts(winners_and_positions: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"winner": winner, "candidate_position": position} for winner, position in winners_and_positions]


def test_a_judge_naming_one_position_whatever_was_shown_there_is_named() -> None:
    # The candidate shown in A in 12 of 24 comparisons; the judge says "A" every time (candidate when it is in A,
    # reference when it is in B).
    always_a = verdicts([("candidate", "A"), ("reference", "B")] * 12)
    warning = position_lean(always_a)
    assert warning is not None
    assert warning.startswith("24 of the judge's 24 decided verdicts named position A, while the candidate was shown in A in 12")


def test_a_judge_following_the_answers_is_not_named() -> None:
    # The candidate is the better answer every time: the judge names wherever it was shown, A as often as B.
    reads = verdicts([("candidate", "A"), ("candidate", "B")] * 12)
    assert position_lean(reads) is None
    # 21 of 24 on one position (87.5%): under the 90% line.
    mostly = verdicts([("candidate", "A"), ("reference", "B")] * 10 + [("candidate", "B")] * 3 + [("candidate", "A")])
    assert position_lean(mostly) is None


def test_too_few_verdicts_or_one_sided_positions_are_not_judged() -> None:
    assert position_lean(verdicts([("candidate", "A"), ("reference", "B")] * 9)) is None  # 18 decided
    assert position_lean(verdicts([("candidate", "A")] * 24)) is None  # the candidate was always shown in A
    ties = verdicts([("tie", "A"), ("tie", "B")] * 20)
    assert position_lean(ties) is None  # a TIE names no position
