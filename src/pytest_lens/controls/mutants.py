"""Mutants: the user's adapter with its memory degraded the way a bad pull request would degrade it.

Each mutant wraps an instance of the user's adapter, built exactly as the adapter itself
is (same class, same options, its own storage), and changes one thing:

| mutant | what changes | conformance (measured on ``bm25``) |
|---|---|---|
| ``top2`` | every search returns only its first 2 results | keeps every clause |
| ``reversed`` | every search ranks the adapter's candidates worst first, then keeps ``limit`` | keeps every clause (1) |
| ``shuffled`` | every search ranks the adapter's candidates in a seeded random order, then keeps ``limit`` | keeps every clause (1) |
| ``half-random`` | half of the positions of every result list (seeded) hold random stored episodes | keeps every clause (1, 2) |
| ``stale`` | the index freezes at the scope's first checkpoint: later episodes are never stored | keeps every clause (3) |
| ``cut200`` | only the first 200 characters of every episode are stored | breaks ``retrieve.roundtrip``, ``reset.forgets``, (4) |

(1) ``recall.rare_token``'s corpora hold the token in one episode, which a keyword memory
returns alone, so re-ordering changes nothing; a semantic memory returns more and may then
miss the clause's top-3 floor. (2) random replacements honour a date range, not other filter
fields: an adapter declaring filter fields breaks ``filters.fields``. (3) the suite asks
its questions before any later ingest, where a stale memory is still current. (4) and
``recall.rare_token`` when the token lies past the first 200 characters.

The candidates of ``reversed`` and ``shuffled`` are the adapter's whole result list, as many as
its manifest's ``max_results_per_search``: the sort is broken before the limit applies, as when a
pull request flips an ``ORDER BY`` that a ``LIMIT`` follows, so with more candidates than the
limit the searches return other episodes, not only the same ones in another order.

Everything else is the adapter's own: manifest, extra tools (``batch_retrieve`` included),
``prepare``, counters, ``close``. Re-ordered results keep the adapter's score column, so
scores still never increase down the list. Random choices are seeded by the run's seed, the
mutant, and the search's query, filters and limit: the same search on the same stored state
gets the same answer, as the contract asks. ``--lens-controls --lens-conformance`` runs the
conformance suite on every mutant.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_lens.contract.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult, UnknownToolError
from pytest_lens.contract.checks import as_document, as_search_results

__all__ = ["MUTANTS", "MutantAdapter", "MutantKind", "mutate"]

#: How many characters of each episode the ``cut200`` mutant stores.
CUT_CHARS = 200
#: How many results the ``top2`` mutant keeps.
TOP_RESULTS = 2


class MutantAdapter(MemoryAdapter):
    """The wrapped adapter, unchanged: mutants override what they degrade."""

    name = "identity"

    def __init__(self, inner: Any, seed: int = 42) -> None:
        self.inner = inner
        self.seed = seed

    def reset(self, scope_id: str) -> None:
        """The adapter's ``reset``."""
        self.inner.reset(scope_id)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """The adapter's ``ingest``."""
        self.inner.ingest(episode_id, scope_id, timestamp, text, meta)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """The adapter's ``prepare``, when it has one."""
        prepare = getattr(self.inner, "prepare", None)
        if prepare is not None:
            prepare(scope_id, checkpoint)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The adapter's results, degraded by :meth:`degrade`."""
        results = as_search_results(self.inner.search(query, filters, limit))
        return self.degrade(results, query, filters, limit)

    def degrade(self, results: list[SearchResult], query: str, filters: dict[str, Any] | None, limit: int | None) -> list[SearchResult]:
        """What this mutant makes of a search's results (the identity here)."""
        return results

    def retrieve(self, ref_id: str) -> Document | None:
        """The adapter's ``retrieve``."""
        raw = self.inner.retrieve(ref_id)
        return None if raw is None else as_document(raw)

    def get_capabilities(self) -> CapabilityManifest:
        """The adapter's manifest."""
        manifest: CapabilityManifest = self.inner.get_capabilities()
        return manifest

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """The adapter's extra tools."""
        method = getattr(self.inner, "call_extended_tool", None)
        if method is None:
            raise UnknownToolError(f"{type(self.inner).__name__} offers no tool named {name!r}")
        return method(name, args)

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """The adapter's synthetic documents."""
        method = getattr(self.inner, "get_synthetic_refs", None)
        return list(method()) if method is not None else []

    def lens_stats(self) -> dict[str, int]:
        """The adapter's counters."""
        method = getattr(self.inner, "lens_stats", None)
        return dict(method()) if method is not None else {}

    def close(self) -> None:
        """The adapter's ``close``."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def _rng(self, query: str, filters: dict[str, Any] | None, limit: int | None) -> random.Random:
        """A generator seeded by the run's seed, this mutant and the search (same search, same draw)."""
        key = json.dumps([self.seed, self.name, query, filters or {}, limit], sort_keys=True, default=str)
        return random.Random(key)


def _reranked(results: list[SearchResult], order: list[int]) -> list[SearchResult]:
    """``results`` in ``order``, each position keeping its original score (scores stay non-increasing)."""
    return [dataclasses.replace(results[index], score=results[position].score) for position, index in enumerate(order)]


class TopTwo(MutantAdapter):
    """Search keeps only its first :data:`TOP_RESULTS` results."""

    name = "top2"

    def degrade(self, results: list[SearchResult], query: str, filters: dict[str, Any] | None, limit: int | None) -> list[SearchResult]:
        """The first two results."""
        return results[:TOP_RESULTS]


class Reranked(MutantAdapter):
    """Search re-orders the adapter's whole candidate list, then keeps ``limit`` results."""

    def __init__(self, inner: Any, seed: int = 42) -> None:
        super().__init__(inner, seed)
        self._candidates: int | None = None

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The candidates (``max_results_per_search`` of them) re-ordered by :meth:`order`, cut to the adapter's own count."""
        if self._candidates is None:  # the manifest never changes (the contract's manifest.valid clause)
            self._candidates = int(getattr(self.get_capabilities(), "max_results_per_search", 10))
        wanted = len(as_search_results(self.inner.search(query, filters, limit)))
        candidates = as_search_results(self.inner.search(query, filters, max(self._candidates, wanted)))
        order = self.order(len(candidates), query, filters, limit)
        # Positions keep the adapter's score column (the best scores first), so scores never increase down the list.
        return _reranked(candidates, order)[:wanted]

    def order(self, count: int, query: str, filters: dict[str, Any] | None, limit: int | None) -> list[int]:
        """Which candidate goes to each position."""
        raise NotImplementedError


class Reversed(Reranked):
    """Search ranks the adapter's candidates worst first."""

    name = "reversed"

    def order(self, count: int, query: str, filters: dict[str, Any] | None, limit: int | None) -> list[int]:
        """Worst first."""
        return list(range(count))[::-1]


class Shuffled(Reranked):
    """Search ranks the adapter's candidates in a seeded random order."""

    name = "shuffled"

    def order(self, count: int, query: str, filters: dict[str, Any] | None, limit: int | None) -> list[int]:
        """A seeded permutation (the same for the same search)."""
        order = list(range(count))
        self._rng(query, filters, limit).shuffle(order)
        return order


class HalfRandom(MutantAdapter):
    """Half of the positions of each result list (chosen at random) hold random stored episodes instead.

    A replacement is an episode of the live scope that the list does not already hold (within
    the date range when the search gives one; other filter fields are not applied), shown as
    its stored text cut to the length of the result it displaces.
    """

    name = "half-random"

    def __init__(self, inner: Any, seed: int = 42) -> None:
        super().__init__(inner, seed)
        #: Episodes of the live scope, id -> timestamp, in ingest order.
        self.stored: dict[str, str] = {}

    def reset(self, scope_id: str) -> None:
        """Forget the stored ids too."""
        super().reset(scope_id)
        self.stored.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Remember the id (and its date, for date ranges)."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        self.stored.pop(episode_id, None)
        self.stored[episode_id] = timestamp

    def degrade(self, results: list[SearchResult], query: str, filters: dict[str, Any] | None, limit: int | None) -> list[SearchResult]:
        """Half of the positions replaced by random stored episodes."""
        rng = self._rng(query, filters, limit)
        positions = sorted(rng.sample(range(len(results)), len(results) // 2))
        shown = {result.ref_id for result in results}
        pool = sorted(ref for ref, timestamp in self.stored.items() if ref not in shown and _in_range(timestamp, filters))
        replacements = rng.sample(pool, min(len(positions), len(pool)))
        out = list(results)
        for position, ref_id in zip(positions, replacements, strict=False):
            document = self.retrieve(ref_id)
            text = document.text[: max(1, len(results[position].text))] if document is not None else ""
            timestamp = self.stored[ref_id]
            out[position] = SearchResult(ref_id=ref_id, text=text, score=results[position].score, metadata={"timestamp": timestamp})
        return out


def _in_range(timestamp: str, filters: Mapping[str, Any] | None) -> bool:
    """Whether the episode's date (as written) lies in the search's ``start_date``..``end_date``, both included."""
    filters = filters or {}
    day = timestamp[:10]
    start, end = filters.get("start_date"), filters.get("end_date")
    return (not start or day >= str(start)[:10]) and (not end or day <= str(end)[:10])


class Stale(MutantAdapter):
    """The index freezes at the scope's first checkpoint: later episodes are never stored.

    ``freeze_at`` gives each dataset scope's first checkpoint, so a question sees the same
    stale memory whatever subset of questions runs; a scope it does not name (the conformance
    suite's) freezes at its first ``prepare``.
    """

    name = "stale"

    def __init__(self, inner: Any, seed: int = 42, freeze_at: Mapping[str, int] | None = None) -> None:
        super().__init__(inner, seed)
        self.freeze_at = dict(freeze_at or {})
        self.ingested = 0
        self.frozen = False

    def reset(self, scope_id: str) -> None:
        """A new stream: the index thaws until its first checkpoint."""
        super().reset(scope_id)
        self.ingested, self.frozen = 0, False

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Stored only before the freeze."""
        self.ingested += 1
        if self.frozen or self.ingested > self.freeze_at.get(scope_id, self.ingested):
            return
        super().ingest(episode_id, scope_id, timestamp, text, meta)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """The adapter's ``prepare``; a scope without a known first checkpoint freezes here."""
        super().prepare(scope_id, checkpoint)
        if scope_id not in self.freeze_at:
            self.frozen = True


class CutTexts(MutantAdapter):
    """Only the first :data:`CUT_CHARS` characters of each episode are stored."""

    name = "cut200"

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the start of the episode."""
        super().ingest(episode_id, scope_id, timestamp, text[:CUT_CHARS], meta)


@dataclass(frozen=True)
class MutantKind:
    """One degradation: its name, what it does, the wrapper, and the conformance clauses it breaks in any adapter."""

    name: str
    description: str
    build: Callable[..., MutantAdapter]
    breaks: tuple[str, ...] = ()


#: Every mutant, in the order reports list them.
MUTANTS: dict[str, MutantKind] = {
    kind.name: kind
    for kind in (
        MutantKind("top2", "results truncated to 2", TopTwo),
        MutantKind("reversed", "ranking reversed (candidates worst first)", Reversed),
        MutantKind("shuffled", "ranking shuffled (candidates in seeded order)", Shuffled),
        MutantKind("half-random", "half of each result list replaced by random stored episodes", HalfRandom),
        MutantKind("stale", "index frozen after the first checkpoint", Stale),
        MutantKind("cut200", "stored texts cut to 200 characters", CutTexts, ("retrieve.roundtrip", "reset.forgets", "recall.rare_token")),
    )
}


def mutate(inner: Any, name: str, *, seed: int = 42, freeze_at: Mapping[str, int] | None = None) -> MutantAdapter:
    """``inner`` wrapped in the mutant ``name`` (:class:`KeyError` for an unknown name)."""
    kind = MUTANTS[name]
    if kind.build is Stale:
        return Stale(inner, seed, freeze_at)
    return kind.build(inner, seed)
