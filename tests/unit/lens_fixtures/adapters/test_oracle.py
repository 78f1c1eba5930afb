"""The oracle control: the question's required evidence first, then the stream in order; no label in sight."""

from __future__ import annotations

from lens_fixtures.adapters.oracle import OracleAdapter


def stored(count: int = 5) -> OracleAdapter:
    oracle = OracleAdapter(snippet_chars=40)
    oracle.reset("s")
    for index in range(count):
        oracle.ingest(f"e{index}", "s", f"2024-01-0{index + 1}T00:00:00", f"episode {index} " + "words " * 20)
    return oracle


def test_a_questions_view_ranks_its_required_evidence_first_then_the_stream() -> None:
    oracle = stored()
    view = oracle.lens_oracle_view(["e3", "e1", "not-stored"])
    found = view.search("anything at all", None, 4)
    assert [hit.ref_id for hit in found] == ["e3", "e1", "e0", "e2"]
    assert [hit.score for hit in found] == sorted((hit.score for hit in found), reverse=True)
    assert all(len(hit.text) <= 40 and hit.metadata == {"timestamp": hit.metadata["timestamp"]} for hit in found)
    # Everything but search is the shared memory's.
    assert view.retrieve("e3") == oracle.retrieve("e3") and view.get_capabilities().search_modes == ["oracle"]
    assert oracle.call_extended_tool("batch_retrieve", {"ref_ids": ["e1", "e9"]})["count"] == 1


def test_without_a_question_a_search_is_the_stream_and_dates_bound_everything() -> None:
    oracle = stored()
    assert [hit.ref_id for hit in oracle.search("q", None, 3)] == ["e0", "e1", "e2"]
    view = oracle.lens_oracle_view(["e4", "e0"])
    within = view.search("q", {"start_date": "2024-01-02", "end_date": "2024-01-04"}, 10)
    assert [hit.ref_id for hit in within] == ["e1", "e2", "e3"]  # the required e4 and e0 lie outside the range
    oracle.ingest("e0", "s", "2024-01-09T00:00:00", "again")  # re-ingested: replaced, and last in the stream
    assert [hit.ref_id for hit in oracle.search("q", None, 10)] == ["e1", "e2", "e3", "e4", "e0"]
    oracle.reset("t")
    assert oracle.search("q") == [] and oracle.lens_oracle_view(["e1"]).search("q") == []
