from __future__ import annotations

import pytest

from pytest_lens.suites import locomo
from pytest_lens.suites.base import SuiteReport
from pytest_lens.suites.locomo import LOCOMO_SUITE, locomo_f1, locomo_normalize
from tests.unit.analysis.factory import result


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


@pytest.fixture
def unstemmed(monkeypatch: pytest.MonkeyPatch) -> None:
    """As without nltk installed."""
    monkeypatch.setattr(locomo, "_porter", lambda: None)


def test_tokens_are_porter_stemmed_as_locomo_does() -> None:
    pytest.importorskip("nltk", reason="the locomo extra (installed by the dev extra) provides nltk")
    assert locomo.stemmer() == "porter"
    assert locomo_f1("She adopted dogs", "adopting a dog", 4) == pytest.approx(2 * (2 / 3) * 1.0 / (2 / 3 + 1.0))
    assert locomo_f1("painting", "paints", 2) == 1.0


@pytest.mark.usefixtures("unstemmed")
def test_without_nltk_tokens_are_compared_unstemmed_and_the_section_says_so() -> None:
    assert locomo.stemmer() == "none"
    assert locomo_f1("painting", "paints", 2) == 0.0
    scored = result("q1", {"locomo_f1": 0.0}).model_copy(
        update={"suite": "locomo", "scorer_details": {"locomo": {"category": 2, "stemmer": locomo.stemmer()}}}
    )
    lines = SuiteReport(LOCOMO_SUITE, {}, [scored]).lines
    assert lines[-1] == ("  F1 tokens stemmed: none; LoCoMo stems with Porter: pip install 'pytest-lens[locomo]' for comparable F1")


def test_the_section_names_porter_stemming_when_it_was_used() -> None:
    scored = result("q1", {"locomo_f1": 1.0}).model_copy(update={"suite": "locomo", "scorer_details": {"locomo": {"stemmer": "porter"}}})
    assert SuiteReport(LOCOMO_SUITE, {}, [scored]).lines[-1] == "  F1 tokens Porter-stemmed (nltk), as LoCoMo's evaluation does"
