from __future__ import annotations

import pytest

from pytest_lens.suites.answers import (
    answer_variants,
    exact_match,
    gold_recall,
    normalize_answer,
    strip_citations,
    substring_exact_match,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  a   cat, an owl  ", "cat owl"),
        ("Théâtre-Royal", "théâtreroyal"),
    ],
)
def test_normalize_answer_follows_drqa(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_citations_are_removed_before_matching() -> None:
    assert strip_citations("Label 3 [mab_c003]").split() == ["Label", "3"]
    # The citation's digits must not fake a substring match of the gold "3".
    assert substring_exact_match("no idea [mab_ttl_c003]", ["3"]) == 0.0


def test_answer_variants_add_the_text_after_answer() -> None:
    assert answer_variants("Reasoning ... Answer: Harare") == ["Reasoning ... Answer: Harare", " Harare"]


def test_subem_em_and_recall() -> None:
    assert substring_exact_match("The capital is Harare, I believe.", ["harare"]) == 1.0
    assert exact_match("The capital is Harare.", ["Harare"]) == 0.0
    assert exact_match("Answer: Harare.", ["Harare"]) == 1.0
    assert exact_match("Harare", ["Lusaka", "the Harare"]) == 1.0
    assert gold_recall("numbers 123 and 456", ["123", "456", "789"]) == pytest.approx(2 / 3)
    assert gold_recall("anything", []) == 0.0


def test_token_f1_and_yes_no_mismatch() -> None:
    assert token_f1("the red fox", "red fox jumps") == pytest.approx(0.8)
    assert token_f1("yes", "no") == 0.0
    assert token_f1("blue", "green") == 0.0
