from __future__ import annotations

from typing import Any

import pytest

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.meme import import_meme
from pytest_lens.datasets.validator import validate_dataset
from pytest_lens.suites.meme.generator import check_meme_dataset


def session(
    kind: str, day: int, turns: list[str], evidence_type: str | None = None, facts: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    conversation = [{"role": role, "content": text} for text in turns for role in ("user", "assistant")]
    return {
        "session_id": f"{kind}_{day}",
        "type": kind,
        "timestamp": f"2023/03/{day:02d} (Sun) 11:24",
        "evidence_type": evidence_type,
        "conversation": conversation,
        "gold_facts": facts,
    }


def record() -> dict[str, Any]:
    """A small episode in the HF record format described by MEME-public build_dataset.py."""
    return {
        "episode_id": "sw_901",
        "domain": "software_project",
        "root": "team_lead",
        "entities": {
            "weekly_report_recipient": {"before": "Seokjin Kang", "after": "James Lee", "task": "C"},
            "log_drain_endpoint": {"before": "stream.velturis.io/aurora", "task": "E"},
        },
        "sessions": [
            session("evidence", 5, ["Our weekly report goes to Seokjin Kang. If the team lead changes, it will be James Lee."],
                    "Fact Introduction (Part 1a)", [{"entity": "weekly_report_recipient", "value": "Seokjin Kang"}]),
            session("filler", 6, ["How do I sort a list?"]),
            session("evidence", 7, ["The log drain endpoint is stream.velturis.io/aurora."], "Fact Introduction (Part 1b)",
                    [{"entity": "log_drain_endpoint", "value": "stream.velturis.io/aurora"}]),
            session("evidence", 9, ["Jihoon Ryu is our new team lead.", "Please delete the log drain endpoint from your memory."],
                    "Change+Delete Event", [{"entity": "team_lead", "value": "Jihoon Ryu"}]),
        ],
        "before_questions": {
            "position_after_session": 2,
            "questions": [
                {"task_type": "Cas", "question": "Who receives the weekly report?", "expected_answer": "Seokjin Kang",
                 "entity": ["weekly_report_recipient"], "entity_values": {"weekly_report_recipient": "James Lee"}, "hop": 1},
                {"task_type": "Del", "question": "What is our log drain endpoint?", "expected_answer": "stream.velturis.io/aurora",
                 "entity": ["log_drain_endpoint"], "entity_values": {"log_drain_endpoint": "stream.velturis.io/aurora"}},
            ],
        },
        "after_questions": {
            "position_after_session": 3,
            "questions": [
                {"task_type": "Cas", "question": "Who receives the weekly report?", "gold_answer": "James Lee",
                 "entity": ["weekly_report_recipient"], "entity_values": {"weekly_report_recipient": "James Lee"}, "hop": 1},
                {"task_type": "Del", "question": "What is our log drain endpoint?", "gold_answer": "I don't have that information",
                 "entity": ["log_drain_endpoint"], "entity_values": {"log_drain_endpoint": "stream.velturis.io/aurora"}},
                {"task_type": "Tr", "question": "List our package managers in order.", "gold_answer": "A, B, C",
                 "entity": ["package_manager"], "entity_values": {"package_manager": ["Pakrat", "Nestly", "Parcelo"]}},
            ],
        },
    }  # fmt: skip


def test_sessions_and_probes_follow_the_run_protocol() -> None:
    dataset = import_meme([record()])
    scope = dataset.scopes[0]
    assert dataset.suite == "meme"
    assert [e.episode_id for e in scope.episodes] == [f"meme_sw_901_s0{i}" for i in range(1, 5)]
    assert scope.episodes[0].meta == {
        "session_id": "evidence_5",
        "session_type": "evidence",
        "evidence_type": "Fact Introduction (Part 1a)",
    }
    before_cas, _before_del, after_cas, after_del, after_tr = dataset.questions
    # position_after_session is the 0-based index of the last session fed before asking.
    assert (before_cas.checkpoint_after, after_cas.checkpoint_after) == (3, 4)
    assert before_cas.phase == "before"
    assert after_cas.phase == "after"
    assert before_cas.entity == after_cas.entity == "weekly_report_recipient"
    # A before-probe expects the value held before the change, not the entity_values convention's new value.
    assert [f.fact for f in before_cas.ground_truth.key_facts] == ["Seokjin Kang"]
    assert [f.fact for f in after_cas.ground_truth.key_facts] == ["James Lee"]
    assert after_cas.stale_values == ("Seokjin Kang",)
    assert after_del.stale_values == ("stream.velturis.io/aurora",)
    assert [f.fact for f in after_tr.ground_truth.key_facts] == ["Pakrat", "Nestly", "Parcelo"]
    assert after_cas.ground_truth.required_evidence_refs == ("meme_sw_901_s01", "meme_sw_901_s04")
    assert after_del.ground_truth.required_evidence_refs == ("meme_sw_901_s03", "meme_sw_901_s04")
    assert validate_dataset(dataset, "meme.json") == []
    assert not [p for p in check_meme_dataset(dataset) if "before-probe" in p]


def test_a_position_outside_the_sessions_names_the_field() -> None:
    bad = record()
    bad["after_questions"]["position_after_session"] = 9
    with pytest.raises(ImportFormatError) as info:
        import_meme([bad])
    assert info.value.field == "[0].after_questions.position_after_session"


def test_an_unknown_task_names_the_field() -> None:
    bad = record()
    bad["after_questions"]["questions"][0]["task_type"] = "Xyz"
    with pytest.raises(ImportFormatError, match="unknown task 'Xyz'"):
        import_meme(bad)
