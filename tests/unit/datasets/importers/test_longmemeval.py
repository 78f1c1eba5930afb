from __future__ import annotations

from typing import Any

import pytest

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.longmemeval import import_longmemeval
from pytest_lens.datasets.validator import validate_dataset


def instance(**changes: Any) -> dict[str, Any]:
    """A small instance in LongMemEval's documented format (README field list)."""
    record: dict[str, Any] = {
        "question_id": "gpt4_2655b836",
        "question_type": "temporal-reasoning",
        "question": "What was the first issue I had with my new car after its first service?",
        "answer": "GPS system not functioning correctly",
        "question_date": "2023/04/10 (Mon) 23:07",
        "haystack_session_ids": ["sharegpt_x1", "answer_4be1b6b4_2", "late_session"],
        "haystack_dates": ["2023/04/01 (Sat) 10:00", "2023/04/10 (Mon) 17:50", "2023/04/11 (Tue) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Any tips for sourdough?"}, {"role": "assistant", "content": "Feed the starter daily."}],
            [{"role": "user", "content": "My GPS system is not functioning correctly since the service.", "has_answer": True}],
            [{"role": "user", "content": "Something after the question date."}],
        ],
        "answer_session_ids": ["answer_4be1b6b4_2"],
    }
    record.update(changes)
    return record


def test_sessions_become_neutral_episodes_and_answer_sessions_required_refs() -> None:
    dataset = import_longmemeval([instance()])
    assert dataset.suite == "longmemeval"
    scope = dataset.scopes[0]
    assert [e.episode_id for e in scope.episodes] == ["lme_gpt4_2655b836_s001", "lme_gpt4_2655b836_s002", "lme_gpt4_2655b836_s003"]
    assert "answer" not in " ".join(e.episode_id for e in scope.episodes)  # ids must not tell which session answers
    assert scope.episodes[1].text.splitlines() == [
        "Chat on 2023/04/10 (Mon) 17:50",
        "user: My GPS system is not functioning correctly since the service.",
    ]
    question = dataset.questions[0]
    assert question.question_type == "temporal_reasoning"
    assert question.ground_truth.required_evidence_refs == ("lme_gpt4_2655b836_s002",)
    assert question.answers == ("GPS system not functioning correctly",)
    assert question.checkpoint_after == 2  # the session dated after the question is not yet ingested
    assert question.prompt.endswith("(Current date: 2023/04/10 (Mon) 23:07.)")
    assert validate_dataset(dataset, "lme.json") == []


def test_abstention_questions_expect_uncertainty() -> None:
    question = import_longmemeval([instance(question_id="q9_abs", answer="You did not mention this")]).questions[0]
    assert question.meta["abstention"] is True
    assert question.answers == ()
    assert question.ground_truth.key_facts[0].fact == "uncertain"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"haystack_session_ids": ["a"]}, "[0].haystack_session_ids"),
        ({"haystack_sessions": "nope"}, "[0].haystack_sessions"),
        ({"haystack_dates": ["2023/04/01 (Sat) 10:00", "soon", "2023/04/11 (Tue) 09:00"]}, "[0].haystack_dates[1]"),
        ({"answer": None}, "[0]"),
    ],
)
def test_bad_instances_name_the_field(changes: dict[str, Any], field: str) -> None:
    record = instance(**changes)
    if changes.get("answer", "") is None:
        del record["answer"]
        field = "[0].answer"
    with pytest.raises(ImportFormatError) as info:
        import_longmemeval([record])
    assert info.value.field == field
