"""Hypothesis strategies for what a memory adapter is fed: ids, timestamps, texts, episodes, queries.

Texts cover what real streams and hostile inputs contain: ordinary prose, the
empty string, arbitrary Unicode (control characters, combining marks, emoji,
right-to-left scripts; never lone surrogates, which are not text) and very long
texts (5,000-20,000 characters, at most one per example, so adapters that embed
every chunk stay affordable).

Prose and long texts come from bounded, seeded pools (:data:`POOL_SIZE` texts per
strategy, the same in every run), so an adapter that embeds what it ingests meets
the same texts again and again within one run and its embedding cache hits: the
clauses that use prose check ranking, state and ids, which do not depend on a
text being new, only on it containing the words they search for. Arbitrary
Unicode stays arbitrary (``unicode_texts``, ``queries``): finding the character an
adapter mangles is what ``retrieve.roundtrip`` is for, and a pool would hide it.
Rare tokens stay fresh too: ``recall.rare_token`` needs a token no other text holds. Ids and scope ids are arbitrary non-empty strings,
as the LENS format allows; timestamps are ``datetime.isoformat()`` strings, naive
or with any UTC offset, as the runner passes them.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

from hypothesis import strategies as st

from pytest_lens.conformance.samples import SampleEpisode

__all__ = [
    "MARKER_WORD",
    "POOL_SIZE",
    "VOCABULARY",
    "episode_ids",
    "episode_lists",
    "long_texts",
    "marked_prose",
    "pooled_words",
    "prose",
    "queries",
    "queries_for",
    "rare_tokens",
    "scope_ids",
    "seeded_words",
    "simple_id",
    "simple_timestamp",
    "texts",
    "timestamps",
    "unicode_texts",
]

# fmt: off
#: Ordinary words for prose episodes; none contains a digit, so generated rare tokens never collide with them.
VOCABULARY = (
    "server", "latency", "queue", "backlog", "shipment", "warehouse", "invoice", "sensor", "temperature", "reading",
    "pallet", "driver", "route", "delay", "alert", "threshold", "audit", "report", "team", "meeting", "budget",
    "review", "customer", "ticket", "deploy", "rollback", "cache", "memory", "disk", "network", "packet", "retry",
    "timeout", "north", "harbor", "supplier", "contract", "forecast", "storm", "power", "outage", "battery", "valve",
    "pressure", "pump", "crew", "shift", "night", "morning", "manager", "engineer", "nurse", "patient", "clinic",
    "dose", "schedule", "train", "station", "platform", "signal", "bridge", "river", "field", "harvest", "grain",
    "price", "market", "order", "refund", "payment", "account", "login", "password", "update", "version", "release",
    "bug", "fix", "test", "build", "pipeline", "cluster", "node", "region", "zone", "backup", "restore", "archive",
    "the", "a", "of", "and", "to", "in", "was", "at", "on", "for", "with", "after", "before", "during", "while",
    "reported", "noticed", "increased", "dropped", "stopped", "started", "failed", "recovered", "checked", "moved",
)
# fmt: on

#: A word every episode of a search-oriented example contains, so a search for it can match them all.
MARKER_WORD = "beacon"

#: Every character UTF-8 can encode: all of Unicode but lone surrogates.
_TEXT_CHARACTERS = st.characters(codec="utf-8")
_ID_CHARACTERS = _TEXT_CHARACTERS


#: Distinct texts a prose strategy draws from (per word-count range); the pool is the same in every run.
POOL_SIZE = 64


def seeded_words(count: int, seed: int) -> list[str]:
    """``count`` words of :data:`VOCABULARY` chosen by a seeded generator."""
    return random.Random(seed).choices(VOCABULARY, k=count)


def pooled_words(index: int, min_words: int, max_words: int) -> list[str]:
    """Text ``index`` of the pool for ``min_words``-``max_words``, its words seeded by ``index``.

    Its length grows with ``index``, from ``min_words`` (text 0, where shrinking goes) to ``max_words`` (the last
    text), through every length in between: hypothesis's preference for boundaries still reaches both extremes.
    """
    span = max_words - min_words
    return seeded_words(min_words + round(index * span / (POOL_SIZE - 1)) if span < POOL_SIZE else min_words + index % (span + 1), index)


def _pool() -> st.SearchStrategy[int]:
    return st.integers(0, POOL_SIZE - 1)


def prose(min_words: int = 0, max_words: int = 60) -> st.SearchStrategy[str]:
    """Space-separated words from :data:`VOCABULARY`: one of :data:`POOL_SIZE` seeded texts of ``min_words``-``max_words`` words.

    One choice per text keeps examples cheap to generate and to shrink (towards text 0, the
    shortest), and the bounded pool lets an embedding cache hit within a run.
    """
    return _pool().map(lambda index: " ".join(pooled_words(index, min_words, max_words)))


def unicode_texts(max_size: int = 300) -> st.SearchStrategy[str]:
    """Arbitrary Unicode text, control characters and NUL included."""
    return st.text(_TEXT_CHARACTERS, max_size=max_size)


def _repeat(piece: str, size: int) -> str:
    return (piece * (size // len(piece) + 1))[:size]


#: Pieces of Unicode a long text may repeat: NUL and controls, combining marks, emoji (a ZWJ sequence), right-to-left
#: and CJK scripts, characters outside the Basic Multilingual Plane.
_UNICODE_PIECES = (
    "\x00\x01\t\r\n",
    "e\u0301a\u0308\u0327",
    "\U0001f469\u200d\U0001f52c \U0001f680",
    "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
    "\u8a18\u61b6\u30c6\u30b9\u30c8",
    "\U00010348\U0001d11e\ufeff\u2028",
)


def long_texts(min_size: int = 5_000, max_size: int = 20_000) -> st.SearchStrategy[str]:
    """A very long text: a short piece (pooled prose or a Unicode piece) repeated to ``min_size``, ``max_size`` or between.

    Pieces and sizes are bounded like every pooled text: what a long text tests is its length
    (truncation, chunking, a size limit) and the characters it repeats, not its wording.
    """
    pieces = st.one_of(prose(1, 12), st.sampled_from(_UNICODE_PIECES))
    return st.builds(_repeat, pieces, st.sampled_from(sorted({min_size, (min_size + max_size) // 2, max_size})))


def texts() -> st.SearchStrategy[str]:
    """Episode texts: prose, the empty string or arbitrary Unicode (long texts are added by :func:`episode_lists`)."""
    return st.one_of(prose(), st.just(""), unicode_texts())


def episode_ids() -> st.SearchStrategy[str]:
    """Realistic ids (``ep_012``) and arbitrary non-empty strings."""
    return st.one_of(st.from_regex(r"[a-z]{1,6}_[0-9]{1,3}", fullmatch=True), st.text(_ID_CHARACTERS, min_size=1, max_size=40))


def scope_ids() -> st.SearchStrategy[str]:
    """Realistic scope ids and arbitrary non-empty strings."""
    return st.one_of(st.sampled_from(["scope_01", "cascading_failure_01"]), st.text(_ID_CHARACTERS, min_size=1, max_size=30))


_OFFSETS: st.SearchStrategy[tzinfo] = st.one_of(
    st.just(UTC),
    st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes))),
)


def timestamps(min_year: int = 1900, max_year: int = 2100) -> st.SearchStrategy[str]:
    """``datetime.isoformat()`` strings, naive or with any UTC offset, with or without microseconds."""
    bounds = (datetime(min_year, 1, 1), datetime(max_year, 12, 31))
    # Naive and aware datetimes are drawn separately: hypothesis's typing does not allow one strategy mixing both with bounds.
    return st.one_of(st.datetimes(*bounds), st.datetimes(*bounds, timezones=_OFFSETS)).map(datetime.isoformat)


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=20))


def metas() -> st.SearchStrategy[dict[str, Any]]:
    """Small ``meta`` dicts of JSON scalars."""
    return st.dictionaries(st.text(min_size=1, max_size=12), _JSON_SCALARS, max_size=3)


def simple_id(index: int) -> str:
    """The id of the ``index``-th episode (0-based) when a clause does not exercise ids: ``ep_001``."""
    return f"ep_{index + 1:03d}"


def simple_timestamp(index: int) -> str:
    """Increasing timestamps an hour apart, for clauses that do not exercise timestamps."""
    return (datetime(2020, 1, 1) + timedelta(hours=index)).isoformat()


@st.composite
def episode_lists(
    draw: st.DrawFn,
    *,
    min_size: int = 1,
    max_size: int = 6,
    text: st.SearchStrategy[str] | None = None,
    long_text: bool = False,
    arbitrary: bool = False,
) -> tuple[SampleEpisode, ...]:
    """Episodes with distinct ids; with ``long_text``, at most one of them is very long.

    Only with ``arbitrary`` are ids, timestamps and ``meta`` generated (arbitrary strings, any
    offset, small dicts); otherwise episodes are ``ep_001``, ``ep_002``... an hour apart with empty
    meta, which keeps examples cheap to generate and shrink for clauses that do not exercise them.
    """
    texts_strategy = text if text is not None else texts()
    if arbitrary:
        episodes = draw(
            st.lists(
                st.builds(SampleEpisode, episode_ids(), timestamps(), texts_strategy, metas()),
                min_size=min_size,
                max_size=max_size,
                unique_by=lambda episode: episode.episode_id,
            )
        )
    else:
        bodies = draw(st.lists(texts_strategy, min_size=min_size, max_size=max_size))
        episodes = [SampleEpisode(simple_id(i), simple_timestamp(i), body) for i, body in enumerate(bodies)]
    if long_text and episodes and draw(st.booleans()):
        index = draw(st.integers(0, len(episodes) - 1))
        chosen = episodes[index]
        episodes[index] = SampleEpisode(chosen.episode_id, chosen.timestamp, draw(long_texts()), chosen.meta)
    return tuple(episodes)


def marked_prose(max_words: int = 40) -> st.SearchStrategy[str]:
    """Prose containing :data:`MARKER_WORD` somewhere: one of :data:`POOL_SIZE` seeded texts."""

    def build(index: int) -> str:
        words = pooled_words(index, 0, max_words)
        words.insert(index % (len(words) + 1), MARKER_WORD)
        return " ".join(words)

    return _pool().map(build)


def queries() -> st.SearchStrategy[str]:
    """Non-blank search queries (the tool bridge never sends a blank one): words, phrases, arbitrary Unicode."""
    return st.one_of(
        st.sampled_from(VOCABULARY),
        prose(1, 6).filter(str.strip),
        st.text(_TEXT_CHARACTERS, min_size=1, max_size=40).filter(str.strip),
    )


def queries_for(episodes: tuple[SampleEpisode, ...]) -> st.SearchStrategy[str]:
    """Queries likely to match: the marker word plus ingested words, one ingested word, or any query.

    With several query words, episodes match different numbers of them, so scores differ.
    """
    words = sorted({word for episode in episodes for word in episode.text.split() if word.strip()})[:200]
    options = [st.just(MARKER_WORD), queries()]
    if words:
        compound = st.lists(st.sampled_from(words), min_size=1, max_size=3).map(lambda picked: " ".join([MARKER_WORD, *picked]))
        options[:0] = [compound, st.sampled_from(words)]
    return st.one_of(*options)


def rare_tokens() -> st.SearchStrategy[str]:
    """A token no prose word contains: letters and digits, e.g. ``kqv7zt``."""
    return st.from_regex(r"[a-z]{2,4}[0-9]{1,3}[a-z]{2,4}", fullmatch=True)
