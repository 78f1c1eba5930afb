from __future__ import annotations

from pathlib import Path

from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.views.terminal import transcript_lines
from pytest_lens.reports.views.transcript import transcripts
from tests.support import run_lens_session


def test_transcript_tells_the_whole_story(example_run: RunArtifact) -> None:
    item = next(item for item in transcripts(example_run) if item.result.adapter == "bm25" and item.result.key_facts)
    r = item.result
    lines = transcript_lines(item, width=120)
    text = "\n".join(lines)
    assert lines[1] == item.test_id
    assert f"outcome: ok, composite {r.composite:.3f}" in text
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
