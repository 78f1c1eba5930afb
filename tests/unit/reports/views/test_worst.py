from __future__ import annotations

from pathlib import Path

from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.views.transcript import build_transcripts, transcripts
from pytest_lens.reports.views.worst import WorstQuestions, agent_gated, worst
from pytest_lens.scoring.composite import DEFAULT_GATES
from tests.unit.analysis.factory import result, tier1


def test_failed_first_then_lowest_composite_gated_before_ok() -> None:
    results = [
        result("fine", tier1(1.0, 1.0)),
        result("weak", tier1(1.0, 0.0)),
        result("gated", tier1(0.0, 0.0)),
        result("broken", tier1(1.0, 1.0), failed=True),
        result("zero-ungated", tier1(1.0, 0.0, citation=0.0, budget=0.0)),
        result("other", tier1(0.0, 0.0), adapter="null"),
    ]
    items = build_transcripts(results, {}, DEFAULT_GATES)
    found = worst(items, 4)
    assert list(found) == ["bm25", "null"]
    assert [item.result.question_id for item in found["bm25"]] == ["broken", "gated", "zero-ungated", "weak"]
    assert [item.result.question_id for item in worst(items, 1)["bm25"]] == ["broken"]


def test_skipped_and_perfect_questions_are_left_out_and_budgets_split_keys() -> None:
    results = [result("a", tier1(1.0, 0.5), budget="4k"), result("b", tier1(1.0, 0.5), budget="16k")]
    perfect = result("p", tier1(1.0, 1.0), budget="16k")
    skipped = result("c", tier1(0.0, 0.0), budget="16k").model_copy(update={"skipped": "not here"})
    found = worst(build_transcripts([*results, perfect, skipped], {}, DEFAULT_GATES), 3)
    assert {key: [i.result.question_id for i in items] for key, items in found.items()} == {"bm25@4k": ["a"], "bm25@16k": ["b"]}
    only_perfect = worst(build_transcripts([perfect], {}, DEFAULT_GATES), 3)
    assert only_perfect == {"bm25": []}  # the adapter is named, with nothing to look at


def test_summary_lines_name_questions_and_where_to_read_them(example_run: RunArtifact) -> None:
    groups = worst(transcripts(example_run), 3)
    lines = WorstQuestions(groups, json_path=Path("run.json"), html_path=Path("report.html")).lines
    assert lines[0] == "worst questions (transcripts: open report.html; lens show run.json ID (or --worst 6)):"
    assert "  null:" in lines
    null_lines = lines[lines.index("  null:") + 1 : lines.index("  null:") + 4]
    assert all("gated" in line and "evidence_grounding 0.000 < 0.5" in line and "null-cold_chain_demo-" in line for line in null_lines)
    bare = WorstQuestions(groups).lines
    assert bare[0] == "worst questions (transcripts: run with --lens-html=report.html or --lens-json=run.json to read them):"
    assert WorstQuestions({}).lines == []
    # after --lens-save alone, the saved run is where to read them (lens show takes a saved run's name)
    saved = WorstQuestions(groups, saved_name="main").lines
    assert saved[0] == "worst questions (transcripts: lens show main ID (or --worst 6), from the saved run):"


def test_questions_gated_by_the_agent_are_not_the_memorys_worst() -> None:
    held = result("held", tier1(0.0, 0.0)).model_copy(update={"required_refs": ["e1", "e2"], "returned_refs": ["e2", "e9"]})
    empty = result("empty", tier1(0.0, 0.0)).model_copy(update={"required_refs": ["e1"], "returned_refs": ["e9"]})
    assert held.gated_by_agent and not empty.gated_by_agent
    items = build_transcripts([held, empty], {}, DEFAULT_GATES)
    assert [item.result.question_id for item in worst(items, 3)["bm25"]] == ["empty"]
    lines = WorstQuestions(worst(items, 3), agent=agent_gated(items)).lines
    assert any("gated by the agent, not the memory" in line for line in lines)
    assert any("held" in line and "it was shown 1 of 2 required refs" in line for line in lines)
