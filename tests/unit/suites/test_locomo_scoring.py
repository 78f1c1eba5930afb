from __future__ import annotations

import pytest

from pytest_lens.suites.locomo import locomo_f1, locomo_normalize


def test_normalisation_drops_commas_articles_and_and() -> None:
    assert locomo_normalize("The cat, and a Dog!") == "cat dog"


@pytest.mark.parametrize(
    ("prediction", "gold", "category", "expected"),
    [
        ("7 May 2023", "7 May 2023", 2, 1.0),
        ("She went on 7 May", "7 May 2023", 4, pytest.approx(2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3))),
        ("psychology, counseling", "Psychology, counseling certification", 1, pytest.approx((1.0 + 2 / 3) / 2)),
        ("running", "running; maybe hiking", 3, 1.0),
        ("That is not mentioned in the conversation. [s1]", "ignored", 5, 1.0),
        ("She adopted a dog.", "ignored", 5, 0.0),
        ("blue", "green", 4, 0.0),
    ],
)
def test_locomo_f1_per_category(prediction: str, gold: str, category: int, expected: float) -> None:
    assert locomo_f1(prediction, gold, category) == expected
