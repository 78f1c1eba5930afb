from __future__ import annotations

import pytest

from pytest_lens.citations import CitedSentence, parse_citations, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Pool exhaustion [ep_1] and retries [ep_2].", ["ep_1", "ep_2"]),
        ("Both [ep_1, ep_2]; again [ep_1][ep_3]", ["ep_1", "ep_2", "ep_3"]),
        ("See [the docs](http://x) and [ref_id: a-1]", ["a-1"]),
        ("Nothing cited here.", []),
        ("[   ] and [!!]", []),
    ],
)
def test_parse_citations(text: str, expected: list[str]) -> None:
    assert parse_citations(text) == expected


def test_citation_only_fragments_join_the_previous_sentence() -> None:
    text = "# Findings\nPressure rose to 5.9 bar. [e3]\nA seal leak was found [e5]. Unrelated claim here.\n---"
    assert split_sentences(text) == [
        CitedSentence("Pressure rose to 5.9 bar. [e3]", ("e3",)),
        CitedSentence("A seal leak was found [e5].", ("e5",)),
        CitedSentence("Unrelated claim here.", ()),
    ]


def test_split_citations_keeps_text_and_groups_in_order() -> None:
    from pytest_lens.citations import split_citations

    text = "- rose 12% [ep_1] then fell [ep_2, ep_3].\n[not-a-ref?] see [link](http://x)"
    parts = split_citations(text)
    assert parts == ["- rose 12% ", ("ep_1",), " then fell ", ("ep_2", "ep_3"), ".\n[not-a-ref?] see [link](http://x)"]
    assert [ref for part in parts if isinstance(part, tuple) for ref in part] == ["ep_1", "ep_2", "ep_3"]
    assert split_citations("") == []
