from __future__ import annotations

import re

from pytest_lens.generator import generate_scope
from pytest_lens.generator.questions import QUESTION_MIX, STAGES, episode_id


def test_ids_are_numbered_and_typed() -> None:
    scope = generate_scope("clinical_trial", 4)
    ids = [q.question_id for q in scope.dataset.questions]
    assert ids[0].startswith("cts04_q01_") and len(set(ids)) == 24
    assert all(re.fullmatch(r"cts04_q\d\d_[a-z_]+", qid) for qid in ids)
    assert all(q.question_id.endswith(q.question_type) for q in scope.dataset.questions)
    assert sum(QUESTION_MIX.values()) == 24 and len(STAGES) == 6


def test_episode_ids_only_say_the_stream_position() -> None:
    assert episode_id("x", 7, 120) == "x_e007"
    assert episode_id("x", 7, 100_000) == "x_e000007"


def test_questions_are_in_checkpoint_order_and_late_ones_need_late_evidence() -> None:
    scope = generate_scope("financial_irregularity", 9)
    checkpoints = [q.checkpoint_after for q in scope.dataset.questions]
    assert checkpoints == sorted(checkpoints)
    position = {e.episode_id: i for i, e in enumerate(scope.dataset.scopes[0].episodes, start=1)}
    root = next(q for q in scope.dataset.questions if q.prompt.startswith("What is the root cause"))
    refs = sorted(position[r] for r in root.ground_truth.required_evidence_refs)
    assert len(refs) == 4 and refs[-1] > 0.75 * len(position) and refs[0] < 0.5 * len(position)


def test_prompts_and_answers_are_filled_in() -> None:
    scope = generate_scope("capacity_regime", 2)
    for question in scope.dataset.questions:
        for text in (question.prompt, question.ground_truth.canonical_answer):
            assert "{" not in text and "}" not in text, text
        assert question.prompt.endswith("?")
    distractor_prompts = [q.prompt for q in scope.dataset.questions if q.question_type == "distractor_resistance"]
    assert len(distractor_prompts) == 3 and len(set(distractor_prompts)) == 3
