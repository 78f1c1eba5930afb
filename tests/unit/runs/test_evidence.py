from __future__ import annotations

from pytest_lens.datasets import LoadedScope
from pytest_lens.runs.evidence import collect_evidence
from tests.unit.analysis.factory import result, tier1


def test_keeps_cited_and_required_episodes_once_in_stream_order(small_scope: LoadedScope) -> None:
    ids = [e.episode_id for e in small_scope.stream]
    first = result("q1", tier1(1.0, 1.0), scope_id=small_scope.scope_id).model_copy(
        update={"cited_refs": [ids[3], "made-up"], "required_refs": [ids[1]], "returned_refs": [ids[5]]}
    )
    second = first.model_copy(update={"adapter": "other", "cited_refs": [ids[1]], "required_refs": [ids[0]]})
    skipped = first.model_copy(update={"question_id": "q2", "required_refs": [ids[4]], "skipped": "not asked"})
    evidence = collect_evidence([first, second, skipped], [small_scope])
    scope = evidence[small_scope.scope_id]
    assert scope.episodes == len(small_scope.stream)
    assert list(scope.texts) == [ids[0], ids[1], ids[3]]  # returned-only, skipped and unknown refs are not kept
    assert scope.texts[ids[0]].text == small_scope.stream[0].text
    assert scope.texts[ids[0]].timestamp == small_scope.stream[0].iso_timestamp
