from __future__ import annotations

from dataclasses import dataclass

from pytest_lens.conformance.samples import SampleEpisode, abbreviate, describe_example, explain_text_difference


def test_short_values_are_shown_as_repr() -> None:
    assert abbreviate("ep_001") == "'ep_001'"
    assert abbreviate(("a",)) == "['a']"  # a 1-tuple must not read like a parenthesised string
    assert abbreviate({"k": 1}) == "{'k': 1}"


def test_long_strings_show_head_tail_and_length() -> None:
    shown = abbreviate("x" * 10_001)
    assert shown.startswith("'xxxx") and shown.endswith("' (10,001 chars)")
    assert "…" in shown and len(shown) < 90


def test_long_lists_are_cut_with_a_count() -> None:
    assert abbreviate(list(range(20))).endswith(", … (20 items)]")


def test_text_differences_name_the_position_and_a_likely_cause() -> None:
    truncated = explain_text_difference("abcdef", "abc")
    assert "3 characters returned, 6 ingested" in truncated
    assert "differ from character 3" in truncated and "returned end of text" in truncated
    assert "truncated prefix" in truncated
    assert "whitespace was stripped" in explain_text_difference("  a b ", "a b")
    assert "Unicode-normalised" in explain_text_difference("e\u0301", "é")
    assert "letter case changed" in explain_text_difference("Alpha", "alpha")
    assert "encoding" in explain_text_difference("naïve", "na?ve")


def test_examples_are_described_one_field_per_line_and_one_episode_per_line() -> None:
    @dataclass(frozen=True)
    class Example:
        scope_id: str
        episodes: tuple[SampleEpisode, ...]
        limit: int | None

    lines = describe_example(Example("s", (SampleEpisode("e1", "2020-01-01T00:00:00", "y" * 500, {"k": "v"}),), None))
    assert lines[0] == "scope_id: 's'"
    assert lines[1] == "episodes: 1 episode(s), ingested in this order"
    assert lines[2].startswith("  [1] id='e1' timestamp='2020-01-01T00:00:00' text='yyy")
    assert "(500 chars)" in lines[2] and lines[2].endswith("meta={'k': 'v'}")
    assert lines[3] == "limit: None"
