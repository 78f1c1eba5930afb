"""``latency.ceiling``: per-call latency under a typical workload, against a configurable ceiling.

Each example streams a few episodes, prepares, searches and retrieves; every
call is timed. After all examples, a method whose p95 exceeds its ceiling is
reported: as an advisory by default, as a failure when enforcement is on.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.latency import latency_stats, over_ceiling
from pytest_lens.conformance.samples import SampleEpisode
from pytest_lens.conformance.strategies import episode_lists, marked_prose, queries_for, scope_ids
from pytest_lens.contract.adapter import CapabilityManifest

__all__ = ["LATENCY_CEILING"]


@dataclass(frozen=True)
class WorkloadExample:
    """A stream, searches and retrievals, as one checkpoint of a LENS run."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    queries: tuple[str, ...]


@st.composite
def _workload_examples(draw: st.DrawFn, manifest: CapabilityManifest) -> WorkloadExample:
    episodes = draw(episode_lists(min_size=1, max_size=8, text=marked_prose()))
    return WorkloadExample(draw(scope_ids()), episodes, tuple(draw(st.lists(queries_for(episodes), min_size=1, max_size=4))))


def _run_workload(context: ClauseContext, example: WorkloadExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for query in example.queries:
            for result in subject.search(query, None, context.search_limit())[:3]:
                subject.retrieve(result.ref_id)
        subject.retrieve(example.episodes[0].episode_id)


def _judge(context: ClauseContext) -> None:
    over = over_ceiling(latency_stats(context.factory.latencies), context.latency_ceilings)
    if over and context.enforce_latency:
        raise ClauseViolation("; ".join(over), method=over[0].partition("(")[0])
    context.advisories.extend(over)


LATENCY_CEILING = Clause(
    id="latency.ceiling",
    contract=(
        "every adapter call is timed; each method's 95th-percentile latency stays under its ceiling "
        "(--lens-latency-ceiling, default 1 s; advisory unless --lens-latency-enforce)"
    ),
    method="search",
    examples=_workload_examples,
    check=_run_workload,
    cost=0.4,
    conclude=_judge,
)
