from __future__ import annotations

from pathlib import Path

from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.views.terminal import transcript_lines
from pytest_lens.reports.views.transcript import transcripts
from tests.support import inline_artifact, run_lens_session


def test_transcript_tells_the_whole_story(example_run: RunArtifact) -> None:
    item = next(item for item in transcripts(example_run) if item.result.adapter == "bm25" and item.result.key_facts)
    r = item.result
    lines = transcript_lines(item, width=120)
    text = "\n".join(lines)
    assert lines[1] == item.test_id
    # The run's headline (the retrieval score) first, the composite beside it where they differ.
    assert f"outcome: ok, headline {item.headline:.3f} (composite {r.composite:.3f})" in text
    assert item.headline != r.composite
    assert r.prompt in text
    assert "reference answer:" in text and f"key facts ({sum(f.found for f in r.key_facts)} of {len(r.key_facts)}" in text
    search = next(call for call in r.tool_calls if call.name == "memory_search")
    outcome = f"ok, {search.result_tokens:,} tokens ({search.result_tokens_left:,} result tokens left"
    assert f'memory_search(query="{r.prompt}", limit=10) -> {outcome}' in text
    for hit in search.hits:
        assert hit.ref_id in text
    for ref in r.required_refs:
        assert any(line.lstrip().startswith(("RCT", "R-T", "R--", "RC-")) and ref in line for line in lines)
    assert "metrics: grounding 1.000" in text
    assert "--episodes prints" in text


def test_episode_texts_on_request(example_run: RunArtifact) -> None:
    item = next(item for item in transcripts(example_run) if item.result.adapter == "null")
    plain = "\n".join(transcript_lines(item))
    full = "\n".join(transcript_lines(item, episode_texts=True))
    ref = item.result.required_refs[0]
    text = example_run.evidence[item.result.scope_id].texts[ref].text
    assert text.splitlines()[0] not in plain
    assert f"--- {ref} (" in full and text.splitlines()[0] in full
    assert "required, never returned" in full
    assert "(gated: evidence_grounding 0.000 < 0.5)" in plain


def test_faults_are_shown(tmp_path: Path) -> None:
    session = run_lens_session(tmp_path, {"raises": "tests.support:SearchRaises"})
    item = transcripts(session.artifact())[0]
    text = "\n".join(transcript_lines(item))
    assert "outcome: failed" in text
    assert "FAULT: adapter 'raises' raised in search(): RuntimeError: index corrupted" in text
    assert "memory_search(" in text and "-> ERROR" in text


def test_a_retrieval_after_a_search_snippet_is_labelled_by_the_text_it_added(example_run: RunArtifact) -> None:
    # bm25's search returns a ~270-character snippet; the retrieval after it returns the whole episode.
    # The transcript must say how much text that added, never "no new text".
    checked = 0
    for item in transcripts(example_run):
        if item.result.adapter != "bm25":
            continue
        lines = transcript_lines(item, width=200)
        searched: set[str] = set()
        for call in item.calls:
            if call.name == "memory_search":
                searched.update(call.returned_refs)
                continue
            for hit in call.hits:
                full = example_run.evidence[item.result.scope_id].texts.get(hit.ref_id)
                if hit.ref_id not in searched or full is None:
                    continue
                assert hit.new_chars is not None and 0 < hit.new_chars < len(full.text)
                row = next(line for line in lines if f" {hit.ref_id}  -  " in line and f"{hit.new_chars:,} new characters" in line)
                assert "no new text" not in row
                checked += 1
    assert checked >= 5


def test_returns_that_added_nothing_say_so_and_older_records_do_not_guess(example_run: RunArtifact) -> None:
    item = next(
        item
        for item in transcripts(example_run)
        if item.result.adapter == "bm25" and any(item.returned_without_hits(call) for call in item.calls)
    )
    text = "\n".join(transcript_lines(item, width=200))
    assert "returned again, no new text (see earlier calls): " in text
    # An artifact from before hits counted new characters cannot tell what a return added: its label says so.
    data = inline_artifact(example_run)
    for result in data["results"]:
        for call in result["tool_calls"]:
            for hit in call["hits"]:
                del hit["new_chars"]
    old = next(old for old in transcripts(RunArtifact.model_validate(data)) if old.test_id == item.test_id)
    old_text = "\n".join(transcript_lines(old, width=200))
    assert "no new text" not in old_text and "new characters" not in old_text
    assert "returned again (its text is not kept in this record; see earlier calls): " in old_text
