from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from lens_fixtures.adapters.chunking import chunk_episode

EPISODE = """## 2024-01-15 Daily Operations Summary

### Endpoint Performance
- /checkout: p50 92ms p99 320ms err 0.12%
- /geo_lookup: p50 55ms p99 180ms err 0.05%

### Alerts
- [NONE]

### Events
- service-B retries rose to 4% during the evening peak after the geo lookup slowed down
"""


def test_one_chunk_per_section_each_starting_with_the_date_header() -> None:
    chunks = chunk_episode(EPISODE, max_words=100, min_words=0)
    assert [chunk.heading for chunk in chunks] == ["Endpoint Performance", "Alerts", "Events"]
    assert all(chunk.text.startswith("## 2024-01-15 Daily Operations Summary\n### ") for chunk in chunks)
    assert chunks[0].text.endswith("err 0.05%")
    assert [chunk.position for chunk in chunks] == [0, 1, 2]


def test_short_sections_join_the_next_rather_than_being_dropped() -> None:
    chunks = chunk_episode(EPISODE, max_words=100, min_words=10)
    assert [chunk.heading for chunk in chunks] == ["Endpoint Performance", "Alerts"]
    assert "- [NONE]\n### Events\n- service-B retries" in chunks[1].text


def test_a_trailing_short_section_joins_the_previous_one() -> None:
    text = "## day\n### Long\n" + "- word " * 30 + "\n### Tail\n- tiny"
    chunks = chunk_episode(text, max_words=100, min_words=10)
    assert len(chunks) == 1
    assert chunks[0].text.endswith("### Tail\n- tiny")


def test_long_sections_split_at_line_boundaries_and_repeat_their_heading() -> None:
    lines = [f"- reading {i} of the compressor was nominal today" for i in range(30)]  # 8 words each
    text = "## 2024-02-01 Plant log\n### Readings\n" + "\n".join(lines)
    chunks = chunk_episode(text, max_words=50, min_words=0)
    assert len(chunks) > 1
    assert all(chunk.words <= 50 for chunk in chunks)
    assert all(chunk.text.startswith("## 2024-02-01 Plant log\n### Readings\n- reading") for chunk in chunks)
    body = [line for chunk in chunks for line in chunk.text.splitlines()[2:]]
    assert body == lines  # every line once, in order, never cut


def test_text_without_sections_or_header() -> None:
    assert [c.text for c in chunk_episode("just a plain note", 150, 20)] == ["just a plain note"]
    chunks = chunk_episode("### Only\n- a line", 150, 20)
    assert [(c.heading, c.text) for c in chunks] == [("Only", "### Only\n- a line")]
    assert chunk_episode("", 150, 20) == []
    assert chunk_episode("   \n\n", 150, 20) == []


def test_a_single_overlong_line_is_split_by_words() -> None:
    text = "### Notes\n" + " ".join(f"w{i}" for i in range(25))
    chunks = chunk_episode(text, max_words=10, min_words=0)
    assert all(chunk.words <= 10 for chunk in chunks)
    assert " ".join(word for chunk in chunks for word in chunk.text.split() if word.startswith("w")) == " ".join(f"w{i}" for i in range(25))


_words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x1", "-", "#tag"]), min_size=1, max_size=25)
_heading = st.lists(st.sampled_from(["Alerts", "Events", "Notes"]), min_size=1, max_size=2)


@settings(max_examples=80, derandomize=os.environ.get("CI") == "true", deadline=None)
@given(
    st.lists(st.one_of(_words.map(" ".join), _heading.map(lambda h: "### " + " ".join(h))), max_size=30),
    st.integers(5, 60),
    st.integers(0, 30),
)
def test_no_word_is_lost_duplicated_or_reordered(lines: list[str], max_words: int, min_words: int) -> None:
    text = "\n".join(lines)
    chunks = chunk_episode(text, max_words=max_words, min_words=min_words)
    first = next((line for line in lines if line.strip()), None)
    has_header = first is not None and not first.startswith("### ")
    body_lines = lines[1:] if has_header else lines
    expected = [word for line in body_lines if not line.startswith("### ") for word in line.split()]
    seen = [
        word
        for chunk in chunks
        for line in chunk.text.splitlines()[1 if has_header else 0 :]
        if not line.startswith("### ")
        for word in line.split()
    ]
    if has_header and not expected:
        # A text that is only its first line (and empty headings) is still indexed.
        assert [word for chunk in chunks for word in chunk.text.split() if word != "###"][: len(first.split())] == first.split()
        return
    assert seen == expected
    assert all(chunk.words <= max_words for chunk in chunks)
    if has_header:
        assert all(chunk.text.splitlines()[0] == first for chunk in chunks)
