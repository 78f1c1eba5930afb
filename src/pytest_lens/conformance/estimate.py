"""How long the conformance suite will take for one adapter, said before it starts, from the adapter's first calls.

A probe builds the adapter twice: the first instance pays one-time costs (importing its libraries, loading an
embedding model) and is not timed; the second is timed through what an average example does: construct, ``reset``,
ingest :data:`PROBE_EPISODES` texts the suite's pools never draw (so nothing is cached), ``prepare``, search and
retrieve. The suite's cost is then the number of examples it will run times what one example's calls cost, counted
from how many calls an example makes on average (:data:`CALLS_PER_EXAMPLE`, measured over the whole suite on the
in-memory example adapter). Texts repeat across examples (the pools), so the probe also ingests texts the warm-up
instance ingested: an adapter that caches what it embeds pays less for those, and the estimate is the range between
every text found again and every text new.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pytest_lens.conformance.clause import Clause
from pytest_lens.conformance.profiles import clause_settings
from pytest_lens.conformance.samples import SampleEpisode
from pytest_lens.conformance.strategies import POOL_SIZE, seeded_words, simple_id, simple_timestamp
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.contract.adapter import CapabilityManifest

__all__ = ["CALLS_PER_EXAMPLE", "PROBE_EPISODES", "SuiteEstimate", "estimate_suite"]

#: Texts the timed probe ingests: prose of 40 words, seeded outside the pools.
PROBE_EPISODES = 4
#: Calls one example makes on average, per method ("construct" counts an instance built and closed); measured with
#: ``benchmarks/conformance_cost.py --calls`` on examples.my_memory:DictMemory, profile ci.
CALLS_PER_EXAMPLE = {"construct": 1.15, "ingest": 4.12, "search": 1.83, "retrieve": 2.78}


@dataclass(frozen=True)
class SuiteEstimate:
    """The expected duration of the suite for one adapter, and what it was computed from."""

    adapter: str
    clauses: int
    examples: int
    #: Seconds per call, by method, as the probe measured them.
    per_call: dict[str, float]
    #: Every text new (nothing cached).
    seconds: float
    #: Every ingested text found again (the cost of a text the adapter has seen, e.g. in its embedding cache).
    low_seconds: float

    def line(self) -> str:
        """``lens conformance [A]: 12 clauses, about 190 examples; expected 1-4 min (...) (its first calls: ...)``."""
        calls = ", ".join(f"{method} {seconds * 1000:.0f} ms" for method, seconds in self.per_call.items())
        if self.seconds <= 1.5 * self.low_seconds:  # repeats cost as much as new texts: no cache to speak of
            expected = f"expected {_duration(self.seconds)}"
        else:
            expected = (
                f"expected {_duration(self.low_seconds)} to {_duration(self.seconds)} "
                "(the pools' texts repeat: nearer the first when the adapter caches what it embeds)"
            )
        head = f"lens conformance [{self.adapter}]: {self.clauses} clauses, about {self.examples} examples"
        return f"{head}; {expected} (its first calls: {calls})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    return f"about {seconds / 60:.0f} min"


def estimate_suite(
    factory: SubjectFactory,
    clauses: Iterable[Clause],
    profile: str,
    manifest: CapabilityManifest,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> SuiteEstimate:
    """Time the adapter's first calls and scale them to the clauses that apply to ``manifest`` under ``profile``.

    Raises what the adapter raises (an ``AdapterCallError``, ``AdapterUnavailable``): the caller reports no estimate then.
    """
    applicable = [clause for clause in clauses if clause.not_applicable(manifest, factory.defines) is None]
    examples = sum(clause_settings(profile, clause.cost).max_examples for clause in applicable)

    def probe_episodes(first: int) -> list[SampleEpisode]:
        # Ids of their own: both sets go into one scope, and a store may refuse an id it holds already.
        return [
            SampleEpisode(simple_id(first + i), simple_timestamp(first + i), " ".join(seeded_words(40, POOL_SIZE * 1000 + first + i)))
            for i in range(PROBE_EPISODES)
        ]

    seen, fresh = probe_episodes(0), probe_episodes(PROBE_EPISODES)
    with factory.fresh() as warm:  # one-time costs (imports, a model loading) are not the suite's per-example cost
        warm.load("lens_probe_warm", seen)
        warm.search("warm up", limit=1)
    per_call: dict[str, float] = {}
    started = clock()
    with factory.fresh() as subject:
        per_call["construct"] = clock() - started
        subject.reset("lens_probe")
        for name, episodes in (("ingest", fresh), ("ingest again", seen)):  # new texts; texts the warm-up ingested
            started = clock()
            for episode in episodes:
                subject.ingest("lens_probe", episode)
            per_call[name] = (clock() - started) / len(episodes)
        subject.prepare("lens_probe", 2 * PROBE_EPISODES)
        started = clock()
        for query in ("probe latency", "warehouse delay", "beacon"):
            subject.search(query)
        per_call["search"] = (clock() - started) / 3
        started = clock()
        for episode in fresh:
            subject.retrieve(episode.episode_id)
        per_call["retrieve"] = (clock() - started) / len(fresh)
    others = sum(CALLS_PER_EXAMPLE[method] * per_call[method] for method in ("construct", "search", "retrieve"))
    high = examples * (others + CALLS_PER_EXAMPLE["ingest"] * per_call["ingest"])
    low = examples * (others + CALLS_PER_EXAMPLE["ingest"] * min(per_call["ingest"], per_call["ingest again"]))
    return SuiteEstimate(factory.label, len(applicable), examples, per_call, high, low)
