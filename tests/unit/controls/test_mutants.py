"""Each mutant degrades exactly what it names, on the real BM25 reference adapter (SQLite FTS5)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.adapters.bm25 import BM25Adapter
from pytest_lens.controls.mutants import CUT_CHARS, MUTANTS, mutate

#: Twelve episodes that all match "pump pressure", each more often than the one before (so BM25's order is known).
EPISODES = [
    (f"e{i:02d}", f"2024-01-{i + 1:02d}T08:00:00", f"## 2024-01-{i + 1:02d} Log\n### Pumps\n- " + " ".join(["pump pressure"] * (i + 1)))
    for i in range(12)
]
#: An episode whose only mention of the valve comes after its first 200 characters.
LONG = ("e99", "2024-01-20T08:00:00", "## 2024-01-20 Log\n### Notes\n- " + "routine " * 40 + "valve seventeen replaced")


def _load(adapter: Any, episodes: list[tuple[str, str, str]] = EPISODES, scope: str = "s") -> Any:
    adapter.reset(scope)
    for ref, timestamp, text in episodes:
        adapter.ingest(ref, scope, timestamp, text, {})
    adapter.prepare(scope, len(episodes))
    return adapter


def _pair(name: str, tmp_path: Path, **kwargs: Any) -> tuple[Any, Any]:
    """The healthy adapter and its mutant, fed the same episodes."""
    healthy = _load(BM25Adapter())
    mutant = _load(mutate(BM25Adapter(), name, **kwargs))
    return healthy, mutant


def _refs(results: list[Any]) -> list[str]:
    return [r.ref_id for r in results]


def _non_increasing(results: list[Any]) -> bool:
    return all(a.score >= b.score for a, b in itertools.pairwise(results))


def test_top2_keeps_the_first_two_results(tmp_path: Path) -> None:
    healthy, mutant = _pair("top2", tmp_path)
    assert _refs(mutant.search("pump pressure", None, 10)) == _refs(healthy.search("pump pressure", None, 10))[:2]


def test_reversed_ranks_every_candidate_worst_first_before_the_limit(tmp_path: Path) -> None:
    healthy, mutant = _pair("reversed", tmp_path)
    good, bad = healthy.search("pump pressure", None, 10), mutant.search("pump pressure", None, 10)
    candidates = healthy.search("pump pressure", None, 20)  # all twelve episodes match; bm25 offers up to 20
    assert len(candidates) == 12
    assert _refs(bad) == _refs(candidates)[::-1][:10]  # the ten worst, worst first: two of them never came back before
    assert [r.score for r in bad] == [r.score for r in good]  # positions keep the adapter's scores: still ordered
    assert bad[0].text == candidates[-1].text
    assert len(mutant.search("pump pressure", None, 3)) == 3


def test_shuffled_is_a_seeded_permutation_of_the_candidates_the_same_for_the_same_search(tmp_path: Path) -> None:
    healthy, mutant = _pair("shuffled", tmp_path)
    good, bad = healthy.search("pump pressure", None, 10), mutant.search("pump pressure", None, 10)
    assert len(bad) == 10 and set(_refs(bad)) <= {ref for ref, _, _ in EPISODES} and _refs(bad) != _refs(good)
    assert _non_increasing(bad)
    assert _refs(mutant.search("pump pressure", None, 10)) == _refs(bad)
    other_seed = _load(mutate(BM25Adapter(), "shuffled", seed=7))
    assert _refs(other_seed.search("pump pressure", None, 10)) != _refs(bad)


def test_half_random_replaces_half_the_positions_with_other_stored_episodes(tmp_path: Path) -> None:
    healthy, mutant = _pair("half-random", tmp_path)
    good, bad = healthy.search("pump pressure", None, 6), mutant.search("pump pressure", None, 6)
    changed = [i for i, (a, b) in enumerate(zip(good, bad, strict=True)) if a.ref_id != b.ref_id]
    assert len(changed) == 3
    stored = {ref for ref, _, _ in EPISODES}
    assert {bad[i].ref_id for i in changed} <= stored - set(_refs(good))
    assert len(set(_refs(bad))) == 6
    assert [r.score for r in bad] == [r.score for r in good]
    assert all(len(bad[i].text) <= len(good[i].text) for i in changed)
    assert _refs(mutant.search("pump pressure", None, 6)) == _refs(bad)
    ranged = mutant.search("pump pressure", {"start_date": "2024-01-03", "end_date": "2024-01-09"}, 4)
    assert all("2024-01-03" <= r.metadata["timestamp"][:10] <= "2024-01-09" for r in ranged)


def test_stale_freezes_at_the_scopes_first_checkpoint(tmp_path: Path) -> None:
    mutant = mutate(BM25Adapter(), "stale", freeze_at={"s": 5})
    _load(mutant)
    assert set(_refs(mutant.search("pump pressure", None, 20))) == {f"e{i:02d}" for i in range(5)}
    assert mutant.retrieve("e07") is None
    mutant.reset("s")  # a replay starts a new stream: stored again up to the freeze
    _load(mutant, EPISODES[:3])
    assert len(mutant.search("pump pressure", None, 20)) == 3


def test_stale_freezes_an_unknown_scope_at_its_first_prepare(tmp_path: Path) -> None:
    mutant = _load(mutate(BM25Adapter(), "stale"), EPISODES[:4], scope="other")
    mutant.ingest("e10", "other", "2024-02-01T00:00:00", "pump pressure pump pressure", {})
    assert "e10" not in _refs(mutant.search("pump pressure", None, 20))


def test_cut200_stores_only_the_start_of_each_episode(tmp_path: Path) -> None:
    healthy = _load(BM25Adapter(), [LONG])
    mutant = _load(mutate(BM25Adapter(), "cut200"), [LONG])
    assert _refs(healthy.search("valve seventeen", None, 5)) == ["e99"]
    assert mutant.search("valve seventeen", None, 5) == []
    assert mutant.retrieve("e99").text == LONG[2][:CUT_CHARS]


def test_a_mutant_keeps_the_adapters_manifest_tools_and_counters(tmp_path: Path) -> None:
    healthy, mutant = _pair("top2", tmp_path)
    assert mutant.get_capabilities() == healthy.get_capabilities()
    payload = mutant.call_extended_tool("batch_retrieve", {"ref_ids": ["e01", "e02"]})
    assert payload == healthy.call_extended_tool("batch_retrieve", {"ref_ids": ["e01", "e02"]})
    assert mutant.lens_stats() == {} and mutant.get_synthetic_refs() == []
    mutant.close()


def test_every_mutant_is_catalogued_with_a_description() -> None:
    assert list(MUTANTS) == ["top2", "reversed", "shuffled", "half-random", "stale", "cut200"]
    assert all(kind.description for kind in MUTANTS.values())
    with pytest.raises(KeyError):
        mutate(object(), "sideways")
