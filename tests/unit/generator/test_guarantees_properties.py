"""The generator's promises, each checked over many (domain, seed) pairs with hypothesis.

The checks here are written independently of :mod:`pytest_lens.generator.guarantees`
(the generator's own self-check) and run on output generated with that self-check off.
"""

from __future__ import annotations

import json
import re

from hypothesis import given

from pytest_lens.datasets.validator import validate_dataset
from pytest_lens.generator import generate_scope
from pytest_lens.generator.questions import QUESTION_MIX
from pytest_lens.generator.vocabulary import SHARED_TERMS
from pytest_lens.scoring.metrics import fact_matched
from pytest_lens.text import STOPWORDS, normalize, words
from tests.unit.generator.helpers import PROPERTY_SETTINGS, distractor_episodes, domains, scope_of, seeds, signal_episodes


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_every_required_ref_is_ingested_before_its_checkpoint(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    position = {e.episode_id: i for i, e in enumerate(scope.dataset.scopes[0].episodes, start=1)}
    for question in scope.dataset.questions:
        refs = question.ground_truth.required_evidence_refs
        assert refs, question.question_id
        assert all(position[ref] <= question.checkpoint_after for ref in refs), question.question_id


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_every_key_fact_is_printed_in_one_of_its_required_refs(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    texts = {e.episode_id: normalize(e.text) for e in scope.dataset.scopes[0].episodes}
    for question in scope.dataset.questions:
        truth = question.ground_truth
        assert truth.key_facts, question.question_id
        for fact in truth.key_facts:
            assert any(fact_matched(fact, texts[ref]) for ref in truth.required_evidence_refs), (question.question_id, fact.fact)


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_no_single_episode_holds_every_key_fact_of_a_longitudinal_question(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    texts = [normalize(e.text) for e in scope.dataset.scopes[0].episodes]
    longitudinal = [q for q in scope.dataset.questions if q.question_type == "longitudinal"]
    assert len(longitudinal) == 4
    for question in longitudinal:
        facts = question.ground_truth.key_facts
        assert len(facts) >= 2
        assert not any(all(fact_matched(fact, text) for fact in facts) for text in texts), question.question_id


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_distractors_contain_no_storyline_term(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)

    def topical(text: str) -> set[str]:
        return {w for w in words(text) if len(w) > 1 and not w.isdigit()} - STOPWORDS - SHARED_TERMS

    storyline: set[str] = set()
    for episode in signal_episodes(scope):
        storyline |= topical(episode.text)
    for episode in distractor_episodes(scope):
        assert not topical(episode.text) & storyline, episode.episode_id
    # The storyline's own names are among the forbidden words, so the check has teeth.
    assert {"checkout", "corvane", "alt", "boron", "dvance", "ridgeway"} & storyline


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_ids_and_meta_leak_nothing(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    (stream,) = scope.dataset.scopes
    ids = [e.episode_id for e in stream.episodes]
    assert ids == [f"{stream.scope_id}_e{i:03d}" for i in range(1, len(ids) + 1)]
    assert len({re.sub(r"\d+", "#", ref) for ref in ids}) == 1
    assert all(e.meta == {} for e in stream.episodes)
    written = json.loads(scope.to_json())
    assert all(set(e) <= {"episode_id", "scope_id", "timestamp", "text", "meta"} for e in written["scopes"][0]["episodes"])
    episodes = json.dumps(written["scopes"]).lower()
    assert not re.search(r"\b(signal|distractor|baseline|red_herring|root_cause|escalation)\b", episodes)
    codes = {issue.code for issue in validate_dataset(scope.dataset, "generated")}
    assert not codes & {"label_meta", "id_label_leak"}
    # Signal reports are not at a fixed offset within their day: their slots vary.
    signal_slots = {ids.index(e.episode_id) % 4 for e in signal_episodes(scope)}
    assert len(signal_slots) > 1


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_same_seed_gives_byte_identical_output(domain: str, seed: int) -> None:
    first = generate_scope(domain, seed, verify=False).to_json()
    assert generate_scope(domain, seed, verify=False).to_json() == first
    assert generate_scope(domain, seed + 1, verify=False).to_json() != first


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_the_validator_finds_nothing_and_the_questions_follow_the_reference_mix(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    assert validate_dataset(scope.dataset, "generated") == []
    questions = scope.dataset.questions
    mix = {qtype: sum(q.question_type == qtype for q in questions) for qtype in QUESTION_MIX}
    assert mix == QUESTION_MIX
    total = len(scope.dataset.scopes[0].episodes)
    checkpoints = sorted({q.checkpoint_after for q in questions})
    assert len(checkpoints) == 6
    assert checkpoints[0] < 0.25 * total and checkpoints[-1] > 0.9 * total


@PROPERTY_SETTINGS
@given(domains, seeds)
def test_null_hypothesis_questions_ask_for_a_value_printed_in_their_one_ref(domain: str, seed: int) -> None:
    scope = scope_of(domain, seed)
    texts = {e.episode_id: e.text for e in scope.dataset.scopes[0].episodes}
    for question in (q for q in scope.dataset.questions if q.question_type == "null_hypothesis"):
        (ref,) = question.ground_truth.required_evidence_refs
        (fact,) = question.ground_truth.key_facts
        assert re.search(r"\d", fact.fact)
        assert fact.fact in texts[ref], (question.prompt, fact.fact)
        assert texts[ref].startswith(f"## {question.prompt.rstrip('?').split(' on ')[-1]} ")
