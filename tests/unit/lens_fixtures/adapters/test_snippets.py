from __future__ import annotations

import pytest

from lens_fixtures.adapters.snippets import excerpt


def test_short_text_is_kept_whole() -> None:
    assert excerpt("  line one\nline two  ", 100) == "line one\nline two"


def test_long_text_is_cut_at_a_line_break_within_the_limit() -> None:
    text = "first line here\nsecond line is longer than the rest\nthird"
    cut = excerpt(text, 30)
    assert cut == "first line here ..."
    assert len(cut) <= 30


def test_falls_back_to_a_word_break_then_a_hard_cut() -> None:
    assert excerpt("alpha beta gamma delta epsilon", 20) == "alpha beta ..."
    assert excerpt("x" * 50, 10) == "x" * 6 + " ..."


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        excerpt("x", 0)
