from __future__ import annotations

import pytest

from pytest_lens.datasets.key_facts import DELETED_FACT, UNCERTAIN_FACT
from pytest_lens.datasets.models import GroundTruth, KeyFact, Question
from pytest_lens.suites.meme.tasks import expresses_uncertainty, judge_probe, mentions


def probe(task: str, values: list[str], phase: str = "after", stale: tuple[str, ...] = (), facts: list[KeyFact] | None = None) -> Question:
    return Question(
        question_id=f"q_{task}",
        scope_id="s",
        checkpoint_after=1,
        question_type=task,
        prompt="?",
        ground_truth=GroundTruth(canonical_answer="-", key_facts=tuple(facts or [KeyFact(fact=v) for v in values])),
        phase=phase,  # type: ignore[arg-type]
        entity="e",
        stale_values=stale,
    )


def test_mentions_is_word_bounded_and_ignores_citations() -> None:
    assert mentions("My cat is Quillon. [s_01]", "quillon")
    assert not mentions("Quillfeather Analytics", "Quill")
    assert not mentions("see [Quillon]", "Quillon")


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("The log: panic: shard 7   lost quorum at epoch 4412 [s01]", True),
        ("panic: shard 7 lost quorum", False),
    ],
)
def test_exact_recall_is_a_verbatim_substring(answer: str, passed: bool) -> None:
    question = probe("exact_recall", ["panic: shard 7 lost quorum at epoch 4412"])
    assert judge_probe(question, answer).passed is passed


def test_aggregation_needs_every_value() -> None:
    question = probe("aggregation", ["pottery", "fencing", "the Dunmore Choir"])
    verdict = judge_probe(question, "I do pottery and fencing.")
    assert (verdict.passed, verdict.partial) == (False, pytest.approx(2 / 3))
    assert judge_probe(question, "Pottery, fencing, and the Dunmore Choir.").passed


@pytest.mark.parametrize(
    ("answer", "passed", "partial"),
    [
        ("First Pakrat, then Nestly, now Parcelo.", True, 1.0),
        ("Parcelo now; before that Pakrat and Nestly.", False, 2 / 3),
        ("Only Nestly.", False, 1 / 3),
        ("No idea.", False, 0.0),
    ],
)
def test_tracking_needs_the_history_in_order(answer: str, passed: bool, partial: float) -> None:
    verdict = judge_probe(probe("tracking", ["Pakrat", "Nestly", "Parcelo"]), answer)
    assert verdict.passed is passed
    assert verdict.partial == pytest.approx(partial)


@pytest.mark.parametrize(
    ("answer", "passed", "reason"),
    [
        ("The weekly report goes to James Lee.", True, "sole"),
        ("If the team lead changes, the weekly report recipient will be James Lee.", False, "conditional"),
        ("It went to Ilse Varga, now James Lee.", False, "stale"),
        ("Probably James Lee, but I am not sure.", False, "hedged"),
        ("I don't know.", False, "missing"),
    ],
)
def test_cascade_needs_the_new_value_as_the_sole_answer(answer: str, passed: bool, reason: str) -> None:
    verdict = judge_probe(probe("cascade", ["James Lee"], stale=("Ilse Varga",)), answer)
    assert verdict.passed is passed
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("I'm not sure any more: the team lead changed.", True),
        ("I could not find sufficient information in memory to answer this question.", True),
        ("It is Ilse Varga, though this may have changed.", False),
        ("It is Dorian Pell.", False),
    ],
)
def test_absence_needs_uncertainty_without_the_stale_value(answer: str, passed: bool) -> None:
    assert judge_probe(probe("absence", [], stale=("Ilse Varga",), facts=[UNCERTAIN_FACT]), answer).passed is passed


def test_deletion_passes_unless_the_value_is_revealed() -> None:
    question = probe("deletion", [], stale=("stream.velturis.io/aurora",), facts=[DELETED_FACT])
    assert judge_probe(question, "I don't have that information.").passed
    assert not judge_probe(question, "The log drain endpoint is stream.velturis.io/aurora. Please delete that.").passed


def test_before_probes_need_the_old_value() -> None:
    question = probe("cascade", ["Ilse Varga"], phase="before")
    assert judge_probe(question, "Ilse Varga gets it.").passed
    assert not judge_probe(question, "Someone else.").passed


def test_uncertainty_phrases() -> None:
    assert expresses_uncertainty("I do not know")
    assert expresses_uncertainty("That is unknown.")
    assert not expresses_uncertainty("It is Ilse Varga.")


def test_unknown_task_fails_with_a_reason() -> None:
    assert judge_probe(probe("juggling", ["x"]), "x").reason == "unknown MEME task 'juggling'"
