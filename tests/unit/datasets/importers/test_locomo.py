from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.locomo import import_locomo
from pytest_lens.datasets.validator import validate_dataset


@pytest.fixture(scope="module")
def locomo(locomo_path: Path) -> Any:
    return json.loads(locomo_path.read_text(encoding="utf-8"))


def test_the_real_file_imports_every_conversation_session_and_question(locomo: Any) -> None:
    dataset = import_locomo(locomo)
    assert dataset.suite == "locomo"
    assert [s.scope_id for s in dataset.scopes][:2] == ["locomo_conv-26", "locomo_conv-30"]
    assert len(dataset.scopes) == 10
    assert sum(len(s.episodes) for s in dataset.scopes) == 272
    assert len(dataset.questions) == 1986
    assert Counter(q.question_type for q in dataset.questions) == {
        "single_hop": 841,
        "adversarial": 446,
        "temporal_reasoning": 321,
        "multi_hop": 282,
        "open_domain": 96,
    }
    # The one evidence entry naming no session ("D", conv-42) is kept and reported as a data defect.
    issues = validate_dataset(dataset, "locomo10.json")
    assert [(i.code, i.question_id) for i in issues] == [("unknown_evidence_ref", "locomo_conv-42_q0089_single_hop")]


def test_sessions_become_dated_episodes_and_evidence_names_their_sessions(locomo: Any) -> None:
    dataset = import_locomo(locomo)
    conv26 = dataset.scopes[0]
    first = conv26.episodes[0]
    assert first.episode_id == "locomo_conv-26_s01"
    assert first.timestamp.isoformat() == "2023-05-08T13:56:00"
    assert first.text.splitlines()[:2] == [
        "Conversation on 1:56 pm on 8 May, 2023 (2023-05-08)",
        "Caroline: Hey Mel! Good to see you! How have you been?",
    ]
    question = dataset.questions[0]
    assert question.prompt == "When did Caroline go to the LGBTQ support group?"
    assert question.ground_truth.required_evidence_refs == ("locomo_conv-26_s01",)
    assert question.ground_truth.key_facts[0].fact == "7 May 2023"
    assert question.checkpoint_after == len(conv26.episodes)
    assert question.meta["category"] == 2


def test_malformed_evidence_entries_of_the_real_file_are_read_leniently(locomo: Any) -> None:
    by_id = {q.question_id.rsplit("_", 2)[0]: q for q in import_locomo(locomo).questions}
    assert by_id["locomo_conv-26_q0038"].ground_truth.required_evidence_refs == ("locomo_conv-26_s08", "locomo_conv-26_s09")
    assert "locomo_conv-43_s11" in by_id["locomo_conv-43_q0019"].ground_truth.required_evidence_refs  # "D:11:26"
    assert by_id["locomo_conv-49_q0032"].ground_truth.required_evidence_refs == ("locomo_conv-49_s09", "locomo_conv-49_s04")


def test_adversarial_questions_expect_no_information(locomo: Any) -> None:
    adversarial = next(q for q in import_locomo(locomo).questions if q.question_type == "adversarial")
    assert adversarial.ground_truth.key_facts[0].patterns == ("no information available", "not mentioned")
    assert "adversarial_answer" in adversarial.meta


def minimal(**changes: Any) -> list[dict[str, Any]]:
    sample: dict[str, Any] = {
        "sample_id": "c1",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "9:00 am on 1 March, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I got a puppy.", "blip_caption": "a photo of a puppy"}],
        },
        "qa": [{"question": "What did A get?", "answer": "a puppy", "evidence": ["D1:1"], "category": 4}],
    }
    sample.update(changes)
    return [sample]


def test_photos_are_described_by_their_caption() -> None:
    episode = import_locomo(minimal()).scopes[0].episodes[0]
    assert episode.text.splitlines()[1] == "A: I got a puppy. (shares a photo: a photo of a puppy)"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"conversation": {"speaker_a": "A"}}, "[0].conversation"),
        ({"qa": [{"question": "?", "evidence": [], "category": 9}]}, "[0].qa[0].category"),
        ({"qa": [{"question": "?", "evidence": [], "category": 4}]}, "[0].qa[0].answer"),
    ],
)
def test_bad_records_name_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ImportFormatError) as info:
        import_locomo(minimal(**changes))
    assert info.value.field == field


def test_an_unreadable_session_date_names_the_field() -> None:
    conversation = minimal()[0]["conversation"] | {"session_1_date_time": "yesterday"}
    with pytest.raises(ImportFormatError, match=r"session_1_date_time: unrecognised date 'yesterday'"):
        import_locomo(minimal(conversation=conversation))
