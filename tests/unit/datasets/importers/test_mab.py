from __future__ import annotations

from typing import Any

import pytest

from pytest_lens.datasets.importers import ImportFormatError
from pytest_lens.datasets.importers.mab import chunk_context, classify_source, import_mab


def row(**changes: Any) -> dict[str, Any]:
    """A small FactConsolidation-style row in MemoryAgentBench's documented schema."""
    facts = [f"{i}. The chairperson of Guild {i % 5} is Person {i}." for i in range(40)]
    record: dict[str, Any] = {
        "context": "Here is a list of facts:\n" + "\n".join(facts) + "\n",
        "questions": ["Who is the chairperson of Guild 3?", "Which sport is goaltender associated with?"],
        "answers": [["Person 38"], ["pesäpallo", "pesapallo"]],
        "metadata": {"source": "factconsolidation_sh_6k", "qa_pair_ids": ["fc_no0", "fc_no1"]},
    }
    record.update(changes)
    return record


def test_context_is_chunked_into_episodes_and_questions_asked_at_the_end() -> None:
    dataset = import_mab(row(), chunk_tokens=64)
    scope = dataset.scopes[0]
    assert dataset.suite == "mab"
    assert scope.scope_id == "mab_factconsolidation_sh_6k_r001"
    assert len(scope.episodes) > 3
    assert all(len(e.text.encode()) // 4 <= 64 + 16 for e in scope.episodes)
    assert "\n".join(e.text for e in scope.episodes).count("chairperson") == 40
    first, second = dataset.questions
    assert first.checkpoint_after == len(scope.episodes)
    assert first.question_type == "conflict_resolution"
    assert first.meta == {"mab_metric": "subem", "source": "factconsolidation_sh_6k", "qa_pair_id": "fc_no0"}
    assert second.answers == ("pesäpallo", "pesapallo")
    assert second.ground_truth.key_facts[0].patterns == ("pesäpallo", "pesapallo")
    assert first.ground_truth.required_evidence_refs == ()  # MemoryAgentBench rows carry no evidence annotations


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("factconsolidation_mh_262k", ("conflict_resolution", "subem", 512)),
        ("ruler_qa1_197K", ("accurate_retrieval", "subem", 512)),
        ("ruler_niah_mq_448K", ("accurate_retrieval", "recall", 512)),
        ("eventqa_full", ("accurate_retrieval", "subem", 4096)),
        ("icl_banking77_5900shot_balance", ("test_time_learning", "exact_match", 4096)),
        ("detective_qa", ("long_range_understanding", "exact_match", 4096)),
        ("infbench_sum_eng_shots2", ("long_range_understanding", "f1", 4096)),
    ],
)
def test_sources_map_to_competency_metric_and_chunk_size(source: str, expected: tuple[str, str, int]) -> None:
    assert classify_source(source) == expected


def test_chunking_packs_sentences_greedily() -> None:
    assert chunk_context("One two. Three four! Five?\nSix", 4) == ["One two.", "Three four!", "Five?\nSix"]
    assert chunk_context("One two. Three four! Five?\nSix", 1000) == ["One two.\nThree four!\nFive?\nSix"]
    assert chunk_context("   ", 10) == []


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"answers": [["a"]]}, "[0].answers"),
        ({"context": ""}, "[0].context"),
        ({"answers": [["a"], []]}, "[0].answers[1]"),
        ({"questions": "x"}, "[0].questions"),
    ],
)
def test_bad_rows_name_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ImportFormatError) as info:
        import_mab([row(**changes)])
    assert info.value.field == field
