"""``search.*``: limits, known refs, score order and determinism of ``search``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate, show_ids
from pytest_lens.conformance.strategies import (
    MARKER_WORD,
    episode_ids,
    episode_lists,
    marked_prose,
    queries_for,
    scope_ids,
    simple_id,
    simple_timestamp,
    unicode_texts,
)
from pytest_lens.contract.adapter import CapabilityManifest, SearchResult

__all__ = [
    "SEARCH_DETERMINISTIC",
    "SEARCH_KNOWN_REFS",
    "SEARCH_LIMIT",
    "SEARCH_ORDERED",
    "SEARCH_STORE_ORDER",
    "describe_call",
    "results_differ",
]

#: Larger corpora are not generated: with a big max_results_per_search only `limit` is exercised.
MAX_CORPUS = 30


@dataclass(frozen=True)
class SearchExample:
    """A stream, then searches ``(query, limit)`` on it."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    searches: tuple[tuple[str, int | None], ...]


def _search_examples(manifest: CapabilityManifest, max_episodes: int = 8, arbitrary_ids: bool = False) -> st.SearchStrategy[SearchExample]:
    """Mostly prose corpora, sometimes with one arbitrary-Unicode episode.

    The first search is the marker word plus ingested words, so episodes match
    different numbers of its words: scores differ, and tie.
    """
    limits = st.one_of(st.none(), st.integers(1, manifest.max_results_per_search + 5))

    @st.composite
    def build(draw: st.DrawFn) -> SearchExample:
        episodes = draw(episode_lists(min_size=0, max_size=max_episodes, text=marked_prose(), arbitrary=arbitrary_ids))
        if draw(st.booleans()):
            odd = draw(unicode_texts(80))
            ref = draw(episode_ids()) if arbitrary_ids else simple_id(len(episodes))
            if ref not in {e.episode_id for e in episodes}:
                episodes += (SampleEpisode(ref, simple_timestamp(len(episodes)), odd),)
        words = sorted({word for episode in episodes for word in episode.text.split() if word != MARKER_WORD})
        picked = draw(st.lists(st.sampled_from(words), min_size=1, max_size=3)) if words else []
        first = (" ".join([MARKER_WORD, *picked]), draw(limits))
        searches = [first, *draw(st.lists(st.tuples(queries_for(episodes), limits), max_size=2))]
        return SearchExample(draw(scope_ids()), episodes, tuple(searches))

    return build()


def _limit_examples(manifest: CapabilityManifest) -> st.SearchStrategy[SearchExample]:
    """Corpora that often exceed the limits: every episode matches the marker word, sizes lean to the largest."""
    declared = manifest.max_results_per_search
    largest = min(declared + 5, MAX_CORPUS)
    limits = st.one_of(st.integers(1, declared), st.none(), st.just(declared + 1), st.integers(1, declared + 5))
    beyond = [st.integers(declared + 1, largest)] if declared < largest else []
    sizes = st.one_of(st.integers(0, largest), *beyond)

    @st.composite
    def build(draw: st.DrawFn) -> SearchExample:
        size = draw(sizes)
        episodes = draw(episode_lists(min_size=size, max_size=size, text=marked_prose(12)))
        # The first search matches every episode, so a corpus larger than its limit tests the limit.
        searches = [(MARKER_WORD, draw(limits)), *draw(st.lists(st.tuples(queries_for(episodes), limits), max_size=2))]
        return SearchExample(draw(scope_ids()), episodes, tuple(searches))

    return build()


def describe_call(query: str, filters: object = None, limit: int | None = None) -> str:
    """``search('beacon', limit=3)`` as shown in messages."""
    parts = [abbreviate(query)]
    if filters:
        parts.append(f"filters={abbreviate(filters)}")
    parts.append(f"limit={limit}")
    return f"search({', '.join(parts)})"


def _check_limit(context: ClauseContext, example: SearchExample) -> None:
    declared = context.max_results
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for query, limit in example.searches:
            results = subject.search(query, None, limit)
            if limit is not None and len(results) > limit:
                raise ClauseViolation(f"{describe_call(query, None, limit)} returned {len(results)} results, more than limit={limit}")
            if len(results) > declared:
                raise ClauseViolation(
                    f"{describe_call(query, None, limit)} returned {len(results)} results, more than the manifest's "
                    f"max_results_per_search={declared}"
                )


SEARCH_LIMIT = Clause(
    id="search.limit",
    contract=(
        "search(query, limit=n) returns at most n results, and never more than the declared max_results_per_search (limit=None included)"
    ),
    method="search",
    examples=_limit_examples,
    check=_check_limit,
    cost=0.6,
)


def _check_known_refs(context: ClauseContext, example: SearchExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        ingested = [episode.episode_id for episode in example.episodes]
        synthetic = sorted(subject.synthetic_refs())
        allowed = set(ingested) | set(synthetic)
        for query, limit in example.searches:
            results = subject.search(query, None, limit)
            if context.stores_nothing and results:
                raise ClauseViolation(
                    f"{describe_call(query, None, limit)} returned {show_ids([r.ref_id for r in results])}, but the manifest declares "
                    "search_modes ['none'] (a memory that stores nothing)"
                )
            unknown = [result.ref_id for result in results if result.ref_id not in allowed]
            if unknown:
                raise ClauseViolation(
                    f"{describe_call(query, None, limit)} returned ref_id {abbreviate(unknown[0])}, which was neither ingested in this "
                    f"scope nor declared by get_synthetic_refs() (ingested: {show_ids(ingested)}; synthetic: {show_ids(synthetic)})"
                )


SEARCH_KNOWN_REFS = Clause(
    id="search.known_refs",
    contract="search returns only ref_ids of episodes ingested in the live scope, or synthetic refs the adapter declares",
    method="search",
    examples=lambda manifest: _search_examples(manifest, arbitrary_ids=True),
    check=_check_known_refs,
    cost=0.6,
)


def _check_ordered(context: ClauseContext, example: SearchExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for query, limit in example.searches:
            results = subject.search(query, None, limit)
            for rank, (before, after) in enumerate(itertools.pairwise(results), start=1):
                if after.score > before.score:
                    raise ClauseViolation(
                        f"{describe_call(query, None, limit)} is not sorted by descending score: result {rank + 1} "
                        f"({abbreviate(after.ref_id)}, score {after.score!r}) follows result {rank} "
                        f"({abbreviate(before.ref_id)}, score {before.score!r})"
                    )


SEARCH_ORDERED = Clause(
    id="search.ordered",
    contract="search results are best first: scores never increase down the list",
    method="search",
    examples=_search_examples,
    check=_check_ordered,
    cost=0.6,
)


def _check_store_order(context: ClauseContext, example: SearchExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for query, limit in example.searches:
            returned = [result.ref_id for result in subject.search(query, None, limit)]
            ranked = subject.store_ranking(query, limit)
            if returned != ranked:
                raise ClauseViolation(
                    f"{describe_call(query, None, limit)} returned {show_ids(returned)}, but the store it wraps ranks "
                    f"{show_ids(ranked)} (lens_store_ranking): the adapter re-ordered, dropped or added results"
                )


SEARCH_STORE_ORDER = Clause(
    id="search.store_order",
    contract=(
        "an adapter over a store with a ranking of its own (it defines lens_store_ranking) returns the store's hits in the "
        "store's order: search never re-sorts them by a score whose direction it has not checked"
    ),
    method="search",
    examples=_search_examples,
    check=_check_store_order,
    cost=0.6,
    needs="lens_store_ranking",
)


def results_differ(first: Sequence[SearchResult], second: Sequence[SearchResult]) -> str | None:
    """How two result lists differ (ids and order, texts, scores to 1e-9 relative), or ``None``."""
    first_ids, second_ids = [r.ref_id for r in first], [r.ref_id for r in second]
    if first_ids != second_ids:
        return f"first {show_ids(first_ids)}, then {show_ids(second_ids)}"
    for a, b in zip(first, second, strict=True):
        if a.text != b.text:
            return f"the text of {abbreviate(a.ref_id)} changed from {abbreviate(a.text)} to {abbreviate(b.text)}"
        if not math.isclose(a.score, b.score, rel_tol=1e-9, abs_tol=1e-12):
            return f"the score of {abbreviate(a.ref_id)} changed from {a.score!r} to {b.score!r}"
    return None


def _check_deterministic(context: ClauseContext, example: SearchExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for query, limit in example.searches:
            first = subject.search(query, None, limit)
            repeated = subject.search(query, None, limit)
            # Other reads in between must not change the answer either: more searches and retrievals.
            for other, other_limit in example.searches:
                subject.search(other, None, other_limit)
            for episode in example.episodes[:3]:
                subject.retrieve(episode.episode_id)
            later = subject.search(query, None, limit)
            for when, again in (("called twice in a row", repeated), ("called again after other reads", later)):
                difference = results_differ(first, again)
                if difference:
                    raise ClauseViolation(f"{describe_call(query, None, limit)} answered differently when {when}: {difference}")


SEARCH_DETERMINISTIC = Clause(
    id="search.deterministic",
    contract="the same search on the same state returns the same results (ids, order, texts and scores), whatever was read in between",
    method="search",
    examples=_search_examples,
    check=_check_deterministic,
    cost=0.6,
)
