"""``retrieve.roundtrip`` and ``retrieve.unknown``: what ``retrieve`` returns for stored and unknown ids."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate, explain_text_difference
from pytest_lens.conformance.strategies import episode_ids, episode_lists, prose, scope_ids
from pytest_lens.contract.adapter import CapabilityManifest

__all__ = ["RETRIEVE_ROUNDTRIP", "RETRIEVE_UNKNOWN"]


@dataclass(frozen=True)
class RoundtripExample:
    """A stream whose every episode is then retrieved."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]


def _roundtrip_examples(manifest: CapabilityManifest) -> st.SearchStrategy[RoundtripExample]:
    return st.builds(RoundtripExample, scope_ids(), episode_lists(min_size=1, max_size=6, long_text=True, arbitrary=True))


def _check_roundtrip(context: ClauseContext, example: RoundtripExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        for episode in example.episodes:
            document = subject.retrieve(episode.episode_id)
            call = f"retrieve({abbreviate(episode.episode_id)})"
            if context.stores_nothing:
                if document is not None:
                    raise ClauseViolation(
                        f"{call} returned a document, but the manifest declares search_modes ['none'] (a memory that stores nothing)"
                    )
                continue
            if document is None:
                raise ClauseViolation(f"{call} returned None for an episode ingested in this scope")
            if document.ref_id != episode.episode_id:
                raise ClauseViolation(f"{call} returned a document whose ref_id is {abbreviate(document.ref_id)}")
            if document.text != episode.text:
                raise ClauseViolation(f"{call} did not return the ingested text: {explain_text_difference(episode.text, document.text)}")


RETRIEVE_ROUNDTRIP = Clause(
    id="retrieve.roundtrip",
    contract="retrieve(ref_id) returns a Document with that ref_id and exactly the ingested text, for every ingested episode",
    method="retrieve",
    examples=_roundtrip_examples,
    check=_check_roundtrip,
)


@dataclass(frozen=True)
class UnknownExample:
    """A stream, then ids that were never ingested (some of them near misses of ingested ids)."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    unknown_ids: tuple[str, ...]


_NEAR_MISSES = (
    lambda ref: ref + " ",
    lambda ref: " " + ref,
    lambda ref: ref.swapcase(),
    lambda ref: ref[:-1],
    lambda ref: ref + "0",
    lambda ref: ref[:-1] + "%",
    lambda ref: ref[:-1] + "_",
    lambda ref: ref + "*",
    lambda ref: "",
)


@st.composite
def _unknown_examples(draw: st.DrawFn, manifest: CapabilityManifest) -> UnknownExample:
    episodes = draw(episode_lists(min_size=0, max_size=5, text=prose(0, 8), arbitrary=True))
    known = {episode.episode_id for episode in episodes}
    candidates = draw(st.lists(st.one_of(episode_ids(), st.just("")), max_size=3))
    for episode in episodes:
        mutate = draw(st.sampled_from(_NEAR_MISSES))
        candidates.append(mutate(episode.episode_id))
    unknown = tuple(dict.fromkeys(ref for ref in candidates if ref not in known)) or ("no-such-episode",)
    if "no-such-episode" in known:  # a generated id could coincide with the fallback
        unknown = tuple(ref for ref in unknown if ref != "no-such-episode") or ("\x00missing\x00",)
    return UnknownExample(draw(scope_ids()), episodes, unknown)


def _check_unknown(context: ClauseContext, example: UnknownExample) -> None:
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        synthetic = subject.synthetic_refs()
        for ref in example.unknown_ids:
            if ref in synthetic:
                continue
            document = subject.retrieve(ref)  # an exception here is an AdapterCallError naming retrieve()
            if document is not None:
                raise ClauseViolation(
                    f"retrieve({abbreviate(ref)}) returned a document (ref_id {abbreviate(document.ref_id)}, "
                    f"text {abbreviate(document.text)}) for an id that was never ingested"
                )


RETRIEVE_UNKNOWN = Clause(
    id="retrieve.unknown",
    contract="retrieve(ref_id) returns None, without raising, for any id that was not ingested (and is not a declared synthetic ref)",
    method="retrieve",
    examples=_unknown_examples,
    check=_check_unknown,
    cost=0.6,
)
