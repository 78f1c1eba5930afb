from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.citations import parse_citations
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.reports.views.transcript import Transcript, outcome_of, transcripts
from tests.support import run_lens_session


def _by_adapter(artifact: RunArtifact, adapter: str) -> list[Transcript]:
    return [item for item in transcripts(artifact) if item.result.adapter == adapter]


def test_test_ids_are_the_pytest_ids(tmp_path: Path) -> None:
    session = run_lens_session(tmp_path, {"bm25": "bm25"}, budgets=("4k", "16k"))
    items = transcripts(session.artifact())
    assert [item.test_id for item in items] == [case.id for case in session.cases]
    assert len({item.anchor for item in items}) == len(items)


def test_repeated_results_of_one_question_get_distinct_anchors(example_run: RunArtifact) -> None:
    twice = example_run.model_copy(update={"results": [*example_run.results[:2], example_run.results[0]]})
    anchors = [item.anchor for item in transcripts(twice)]
    assert anchors[0] != anchors[2] and anchors[2] == anchors[0] + "-2"


def test_evidence_marks_required_cited_and_returned(example_run: RunArtifact) -> None:
    for item in _by_adapter(example_run, "bm25"):
        rows = {row.ref_id: row for row in item.evidence()}
        r = item.result
        assert set(rows) == set(r.required_refs) | set(r.cited_refs) | set(r.returned_refs)
        for ref in r.required_refs:
            assert rows[ref].required
            assert rows[ref].verdict.startswith("required")
        for ref in r.cited_refs:
            assert rows[ref].cited and rows[ref].grounded == (ref in r.returned_refs)
        # Every returned ref names the first call that returned it.
        for row in rows.values():
            if row.returned:
                assert row.first_call is not None
                assert row.ref_id in next(call for call in r.tool_calls if call.index == row.first_call).returned_refs


def test_null_memory_required_evidence_is_never_returned(example_run: RunArtifact) -> None:
    items = _by_adapter(example_run, "null")
    assert items and all(item.outcome == "gated" for item in items)
    required_rows = [row for item in items for row in item.evidence() if row.required]
    assert required_rows and {row.verdict for row in required_rows} == {"required, never returned"}
    # Required episodes keep their text in the artifact, so the report can show what was missed.
    assert all(row.episode is not None and row.episode.text for row in required_rows)


def test_answer_parts_link_each_citation_to_its_episode(example_run: RunArtifact) -> None:
    item = next(item for item in _by_adapter(example_run, "bm25") if item.result.cited_refs)
    parts = item.answer_parts()
    marks = [mark for part in parts if not isinstance(part, str) for mark in part]
    assert list(dict.fromkeys(mark.ref_id for mark in marks)) == item.result.cited_refs
    assert all(mark.has_text and mark.grounded for mark in marks)
    assert any(mark.required for mark in marks)
    text = "".join(part if isinstance(part, str) else "[" + ", ".join(m.shown for m in part) + "]" for part in parts)
    assert text == item.result.answer


def test_aliases_resolve_to_stored_ids(aliased_run: RunArtifact) -> None:
    item = next(item for item in transcripts(aliased_run) if item.result.cited_refs)
    shown = parse_citations(item.result.answer)
    assert shown and all(ref.startswith("ref_") for ref in shown)  # the agent cited aliases
    marks = [mark for part in item.answer_parts() if not isinstance(part, str) for mark in part]
    assert {mark.ref_id for mark in marks} == set(item.result.cited_refs)
    assert all(mark.ref_id != mark.shown and mark.has_text for mark in marks)


def test_tool_calls_record_snippets_and_the_budget_left(example_run: RunArtifact) -> None:
    item = _by_adapter(example_run, "bm25")[0]
    calls = item.calls
    search = next(call for call in calls if call.name == "memory_search")
    assert search.hits and all(hit.snippet and hit.score is not None for hit in search.hits)
    # A ref's text is kept once per question: a later retrieval of a searched ref carries no new snippet.
    later = [hit for call in calls if call.index > search.index for hit in call.hits]
    assert all(not hit.snippet for hit in later if hit.ref_id in {h.ref_id for h in search.hits})
    cap = 16_384
    spent = 0
    for number, call in enumerate(calls, start=1):
        spent += call.result_tokens
        assert call.result_tokens_left == cap - spent
        assert call.calls_left == 20 - number


def test_outcomes(tmp_path: Path, example_run: RunArtifact) -> None:
    session = run_lens_session(tmp_path, {"raises": "tests.support:SearchRaises"})  # search raises "index corrupted"
    failed = transcripts(session.artifact())
    assert {item.outcome for item in failed} == {"failed"}
    assert any(kind == "fault" and "index corrupted" in text for item in failed for kind, text in item.problems())
    assert {outcome_of(r) for r in example_run.results} == {"ok", "gated"}
    skipped = QuestionResult.model_validate({**example_run.results[0].model_dump(), "skipped": "no mem0 here"})
    assert outcome_of(skipped) == "skipped"


def test_gate_reasons_name_the_failing_gate(example_run: RunArtifact) -> None:
    gated = [item for item in transcripts(example_run) if item.result.gated]
    assert gated and all(item.gate_reasons == ("evidence_grounding 0.000 < 0.5",) for item in gated)


@pytest.mark.parametrize("adapter", ["bm25", "null"])
def test_view_is_json_ready(example_run: RunArtifact, adapter: str) -> None:
    for item in _by_adapter(example_run, adapter):
        view = json.loads(json.dumps(item.view()))
        assert view["anchor"] == item.anchor and view["prompt"] == item.result.prompt
        assert len(view["calls"]) == len(item.result.tool_calls)
        assert len(view["evidence"]) == len(item.evidence())


def test_a_question_not_measured_says_so_and_blames_no_memory(example_run: RunArtifact) -> None:
    reason = "agent 'llm' could not get an answer from its model: LLM request to http://127.0.0.1:9/v1 failed: APIConnectionError"
    result = example_run.results[0].model_copy(update={"not_measured": reason, "metrics": {}, "composite": 0.0, "gated": False})
    item = next(iter(transcripts(example_run.model_copy(update={"results": [result]}))))
    assert item.outcome == "failed"
    assert ("not-measured", reason) in item.problems()
    assert not any(kind == "fault" for kind, _ in item.problems())
