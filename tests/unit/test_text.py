from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_lens import text
from pytest_lens.text import normalize


def general_path(value: str) -> str:
    """normalize() without its ASCII fast path."""
    value = unicodedata.normalize("NFKD", value)
    value = "".join(ch for ch in value if not unicodedata.combining(ch)).lower()
    return text._SPACE.sub(" ", text._PUNCT.sub(" ", value)).strip()


@settings(max_examples=300, derandomize=True)
@given(st.text(alphabet=st.characters(max_codepoint=127) | st.sampled_from(list("..%1 9")), max_size=60))
def test_the_ascii_fast_path_matches_the_general_path(value: str) -> None:
    assert normalize(value) == general_path(value)


def test_normalize_keeps_decimals_and_percent_and_drops_accents() -> None:
    assert normalize("Error rate: 2.40% (p99 1,450 ms).") == "error rate 2.40% p99 1 450 ms"
    assert normalize("Café déjà-vu") == "cafe deja vu"
