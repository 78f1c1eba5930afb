"""``reset.forgets``, ``scope.isolation`` and ``prepare.idempotent``: how state evolves between calls."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.checks.search import describe_call
from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate, show_ids
from pytest_lens.conformance.strategies import MARKER_WORD, episode_lists, marked_prose, scope_ids, simple_id, simple_timestamp
from pytest_lens.conformance.subject import Subject
from pytest_lens.contract.adapter import CapabilityManifest, Document, SearchResult

__all__ = ["PREPARE_IDEMPOTENT", "RESET_FORGETS", "SCOPE_ISOLATION", "View", "observe"]


@dataclass(frozen=True)
class View:
    """What the memory answers: searches (in order) and retrievals."""

    searches: dict[str, list[SearchResult]]
    documents: dict[str, Document | None]


def observe(subject: Subject, queries: Sequence[str], ids: Sequence[str], limit: int) -> View:
    """Run every query (``limit`` results) and retrieve every id."""
    return View(
        searches={query: subject.search(query, None, limit) for query in queries},
        documents={ref: subject.retrieve(ref) for ref in ids},
    )


def _queries_from(episodes: Sequence[SampleEpisode]) -> st.SearchStrategy[tuple[str, ...]]:
    words = sorted({word for episode in episodes for word in episode.text.split()} | {MARKER_WORD})
    return st.lists(st.sampled_from(words), min_size=1, max_size=3, unique=True).map(tuple)


def _differs_from(old: str) -> Callable[[str], bool]:
    return lambda new: new != old


@st.composite
def _second_stream(draw: st.DrawFn, first: tuple[SampleEpisode, ...], max_size: int) -> tuple[SampleEpisode, ...]:
    """Episodes of a later stream: some reuse ids of ``first`` with new texts, as two scopes numbering episodes alike would."""
    reused = []
    for old in first:
        if draw(st.booleans()):
            text = draw(marked_prose().filter(_differs_from(old.text)))
            reused.append(SampleEpisode(old.episode_id, old.timestamp, text))
    new_texts = draw(st.lists(marked_prose(), max_size=max_size))
    return tuple(reused) + tuple(SampleEpisode(simple_id(100 + i), simple_timestamp(100 + i), text) for i, text in enumerate(new_texts))


@dataclass(frozen=True)
class ResetExample:
    """A stream, ``reset`` of its scope, then a second stream in the same scope."""

    scope_id: str
    before_reset: tuple[SampleEpisode, ...]
    after_reset: tuple[SampleEpisode, ...]
    queries: tuple[str, ...]


@st.composite
def _reset_examples(draw: st.DrawFn, manifest: CapabilityManifest) -> ResetExample:
    before = draw(episode_lists(min_size=1, max_size=5, text=marked_prose()))
    after = draw(_second_stream(before, 3))
    return ResetExample(draw(scope_ids()), before, after, draw(_queries_from(before)))


def _check_reset(context: ClauseContext, example: ResetExample) -> None:
    scope = example.scope_id
    forgotten = [e.episode_id for e in example.before_reset]
    with context.fresh() as subject:
        subject.load(scope, example.before_reset)
        subject.reset(scope)
        for ref in forgotten:
            document = subject.retrieve(ref)
            if document is not None:
                raise ClauseViolation(
                    f"after reset({abbreviate(scope)}), retrieve({abbreviate(ref)}) still returns the episode", method="reset"
                )
        limit = context.max_results
        for query in example.queries:
            stale = [r.ref_id for r in subject.search(query, None, limit) if r.ref_id in forgotten]
            if stale:
                raise ClauseViolation(
                    f"after reset({abbreviate(scope)}), {describe_call(query, None, limit)} still returns {show_ids(stale)}", method="reset"
                )
        # Stream the scope again, as the runner does when a question goes back to an earlier checkpoint.
        subject.load(scope, example.after_reset, reset=False)
        old_texts = {e.episode_id: e.text for e in example.before_reset}
        current = {e.episode_id for e in example.after_reset}
        for episode in example.after_reset:
            document = subject.retrieve(episode.episode_id)
            if context.stores_nothing:
                continue
            call = f"retrieve({abbreviate(episode.episode_id)})"
            if document is None:
                raise ClauseViolation(f"after reset({abbreviate(scope)}) and a new ingest, {call} returns None", method="reset")
            if document.text == old_texts.get(episode.episode_id) != episode.text:
                raise ClauseViolation(
                    f"after reset({abbreviate(scope)}) and ingesting a new text under the same id, {call} returns the text from before "
                    "the reset",
                    method="reset",
                )
            if document.text != episode.text:
                raise ClauseViolation(f"after reset({abbreviate(scope)}) and a new ingest, {call} returns {abbreviate(document.text)}")
        for ref in forgotten:
            if ref not in current and subject.retrieve(ref) is not None:
                raise ClauseViolation(
                    f"after reset({abbreviate(scope)}) and a new stream, retrieve({abbreviate(ref)}) returns an episode of the old stream",
                    method="reset",
                )
        for query in example.queries:
            stale = [r.ref_id for r in subject.search(query, None, limit) if r.ref_id in forgotten and r.ref_id not in current]
            if stale:
                raise ClauseViolation(
                    f"after reset({abbreviate(scope)}) and a new stream, {describe_call(query, None, limit)} returns "
                    f"{show_ids(stale)} of the old stream",
                    method="reset",
                )


RESET_FORGETS = Clause(
    id="reset.forgets",
    contract=(
        "reset(scope) forgets everything ingested into the scope: retrieve and search no longer return it, "
        "and a new stream in the same scope (ids reused with new texts) shows only the new episodes"
    ),
    method="reset",
    examples=_reset_examples,
    check=_check_reset,
    cost=0.6,
)


@dataclass(frozen=True)
class IsolationExample:
    """Scope A is streamed, then the runner switches to scope B (``reset(A)``, ``reset(B)``) and streams it."""

    scope_a: str
    scope_b: str
    stream_a: tuple[SampleEpisode, ...]
    stream_b: tuple[SampleEpisode, ...]
    queries: tuple[str, ...]


@st.composite
def _isolation_examples(draw: st.DrawFn, manifest: CapabilityManifest) -> IsolationExample:
    scope_a = draw(scope_ids())
    scope_b = draw(scope_ids().filter(lambda scope: scope != scope_a))
    stream_a = draw(episode_lists(min_size=1, max_size=5, text=marked_prose()))
    stream_b = draw(_second_stream(stream_a, 4).filter(bool))
    return IsolationExample(scope_a, scope_b, stream_a, stream_b, draw(_queries_from(stream_a + stream_b)))


def _grouped(results: Sequence[SearchResult]) -> list[tuple[float, frozenset[tuple[str, str]]]]:
    """Results as runs of equal scores: the order among tied results is the adapter's business."""
    groups: list[tuple[float, set[tuple[str, str]]]] = []
    for result in results:
        if groups and math.isclose(groups[-1][0], result.score, rel_tol=1e-6, abs_tol=1e-9):
            groups[-1][1].add((result.ref_id, result.text))
        else:
            groups.append((result.score, {(result.ref_id, result.text)}))
    return [(score, frozenset(items)) for score, items in groups]


def _same_ranking(first: Sequence[SearchResult], second: Sequence[SearchResult]) -> bool:
    a, b = _grouped(first), _grouped(second)
    return len(a) == len(b) and all(
        items_a == items_b and math.isclose(score_a, score_b, rel_tol=1e-6, abs_tol=1e-9)
        for (score_a, items_a), (score_b, items_b) in zip(a, b, strict=True)
    )


def _shown(results: Sequence[SearchResult]) -> str:
    """``[('ep_001', 1.5), ...]``: ids with scores."""
    return abbreviate([(r.ref_id, round(r.score, 6)) for r in results])


def _check_isolation(context: ClauseContext, example: IsolationExample) -> None:
    a, b = example.scope_a, example.scope_b
    ids_b = {e.episode_id for e in example.stream_b}
    only_a = [e.episode_id for e in example.stream_a if e.episode_id not in ids_b]
    every_id = list(dict.fromkeys([e.episode_id for e in example.stream_a] + [e.episode_id for e in example.stream_b]))
    limit = context.max_results
    with context.fresh() as alone:
        alone.load(b, example.stream_b)
        expected = observe(alone, example.queries, every_id, limit)
    with context.fresh() as subject:
        subject.load(a, example.stream_a)
        observe(subject, example.queries, every_id, limit)  # warm whatever caches the adapter keeps
        subject.reset(a)
        subject.reset(b)
        subject.load(b, example.stream_b, reset=False)
        got = observe(subject, example.queries, every_id, limit)
    switch = f"after streaming scope {abbreviate(a)} and switching to scope {abbreviate(b)} (reset of both, as the runner does)"
    for ref in only_a:
        if got.documents[ref] is not None:
            raise ClauseViolation(f"{switch}, retrieve({abbreviate(ref)}) returns an episode of scope {abbreviate(a)}")
    for query, results in got.searches.items():
        leaked = [r.ref_id for r in results if r.ref_id in only_a]
        if leaked:
            raise ClauseViolation(f"{switch}, {describe_call(query, None, limit)} returns {show_ids(leaked)} of scope {abbreviate(a)}")
    for ref in every_id:
        want, have = expected.documents[ref], got.documents[ref]
        if (want is None) != (have is None) or (want and have and want.text != have.text):
            raise ClauseViolation(
                f"{switch}, retrieve({abbreviate(ref)}) returns {abbreviate(have.text if have else None)}; an adapter that only saw "
                f"scope {abbreviate(b)} returns {abbreviate(want.text if want else None)}"
            )
    for query, results in got.searches.items():
        if not _same_ranking(expected.searches[query], results):
            raise ClauseViolation(
                f"{switch}, {describe_call(query, None, limit)} answers {_shown(results)}; an adapter that only saw scope "
                f"{abbreviate(b)} answers {_shown(expected.searches[query])} (state of the old scope leaks: ranking statistics, "
                "caches, indexes)"
            )


SCOPE_ISOLATION = Clause(
    id="scope.isolation",
    contract=(
        "scopes do not leak into each other: after the runner switches from scope A to scope B, retrieve and search answer "
        "exactly as an adapter that only ever saw scope B (same ids, texts, ranking and scores)"
    ),
    method="search",
    examples=_isolation_examples,
    check=_check_isolation,
    cost=0.6,
)


@dataclass(frozen=True)
class PrepareExample:
    """A stream prepared once, then ``prepare`` called again at the same checkpoint."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    queries: tuple[str, ...]
    extra_prepares: int


@st.composite
def _prepare_examples(draw: st.DrawFn, manifest: CapabilityManifest) -> PrepareExample:
    episodes = draw(episode_lists(min_size=1, max_size=6, text=marked_prose()))
    return PrepareExample(draw(scope_ids()), episodes, draw(_queries_from(episodes)), draw(st.integers(1, 3)))


def _check_prepare(context: ClauseContext, example: PrepareExample) -> None:
    ids = [e.episode_id for e in example.episodes]
    checkpoint = len(example.episodes)
    limit = context.max_results
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        first, synthetic_first = observe(subject, example.queries, ids, limit), subject.synthetic_refs()
        for _ in range(example.extra_prepares):
            subject.prepare(example.scope_id, checkpoint)
        again, synthetic_again = observe(subject, example.queries, ids, limit), subject.synthetic_refs()
    calls = f"prepare({abbreviate(example.scope_id)}, {checkpoint}) called {example.extra_prepares + 1} times"
    if synthetic_first != synthetic_again:
        raise ClauseViolation(
            f"with {calls}, get_synthetic_refs() changed from {show_ids(sorted(synthetic_first))} to {show_ids(sorted(synthetic_again))}"
        )
    for query in example.queries:
        if not _same_ranking(first.searches[query], again.searches[query]):  # ties may come in any order
            raise ClauseViolation(
                f"with {calls}, {describe_call(query, None, limit)} changed from {_shown(first.searches[query])} "
                f"to {_shown(again.searches[query])}"
            )
    for ref in ids:
        want, have = first.documents[ref], again.documents[ref]
        if (want.text if want else None) != (have.text if have else None):
            raise ClauseViolation(f"with {calls}, retrieve({abbreviate(ref)}) changed")


PREPARE_IDEMPOTENT = Clause(
    id="prepare.idempotent",
    contract=(
        "prepare(scope, checkpoint) is idempotent: calling it again at the same checkpoint changes no search, retrieval or synthetic ref"
    ),
    method="prepare",
    examples=_prepare_examples,
    check=_check_prepare,
    cost=0.6,
)
