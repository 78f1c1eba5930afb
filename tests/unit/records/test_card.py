"""The comparability card: what it records, where two cards differ, which differences refuse a comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_lens.records.card import (
    REFUSING,
    ComparabilityCard,
    differences,
    endpoint_kind,
    parse_accepted,
    refusing,
    selection_of,
)
from pytest_lens.records.identity import RunIdentity

RUN: dict[str, Any] = {
    "agent": {"name": "llm"},
    "judge": {"name": "llm"},
    "llm": {"base_url": "http://127.0.0.1:41234/v1", "agent_model": "qwen", "judge_model": "judge-a"},
    "budgets": [{"name": "8k", "result_token_cap": 8192, "max_turns": 8}],
    "datasets": [{"path": "/data/scope.json", "sha256": "a" * 64}],
    "headline": {"name": "composite"},
    "seed": 42,
    "repeat": 1,
}


@dataclass(frozen=True)
class Asked:
    scope_id: str
    question_id: str
    question_type: str


QUESTIONS = [Asked("s1", "q1", "longitudinal"), Asked("s1", "q2", "temporal"), Asked("s2", "q1", "temporal")]


def card(questions: list[Asked] = QUESTIONS, **change: Any) -> ComparabilityCard:
    return RunIdentity.model_validate({**RUN, **change}).derived_card(questions, scoring="paper", test="Wilcoxon signed-rank")


def test_a_card_names_every_field_a_run_depends_on() -> None:
    found = card()
    assert found.data == {"scope.json": "a" * 64}
    assert (found.selection.questions, found.selection.scopes) == (3, 2)  # type: ignore[union-attr]
    assert found.budget == ["8k (result_token_cap 8,192, max_turns 8)"]
    assert found.agent == "llm qwen (local)"  # the port of a local server is a detail of one run
    assert found.judge == "llm judge-a (local)"
    assert (found.scoring, found.headline, found.test) == ("paper", "composite", "Wilcoxon signed-rank")
    assert found.categories == ["longitudinal", "temporal"]
    assert (found.repetitions, found.seed) == (1, 42)
    assert card(llm={**RUN["llm"], "base_url": "http://127.0.0.1:9/v1"}) == found
    items = found.items()
    assert items[0].startswith("data*: 1 file, sha256 ") and "judge*: llm judge-a (local)" in items and "seed: 42" in items


def test_the_selection_digest_is_of_the_question_ids_whatever_their_order_or_adapter() -> None:
    first, _ = selection_of(QUESTIONS)
    again, _ = selection_of([*reversed(QUESTIONS), QUESTIONS[0]])  # another adapter asked q1 again
    other, _ = selection_of(QUESTIONS[:2])
    assert first == again and first.digest != other.digest


@pytest.mark.parametrize(
    ("change", "field", "line"),
    [
        (
            {"llm": {**RUN["llm"], "judge_model": "judge-b"}},
            "judge",
            "judge differs: this run llm judge-b (local), baseline llm judge-a (local)",
        ),
        ({"judge": None}, "judge", "judge differs: this run none, baseline llm judge-a (local)"),
        ({"llm": {**RUN["llm"], "agent_model": "llama"}}, "agent", "agent differs: this run llm llama (local), baseline llm qwen (local)"),
        ({"agent": {"name": "offline"}}, "agent", "agent differs: this run offline, baseline llm qwen (local)"),
        ({"budgets": [{"name": "8k", "result_token_cap": 4096, "max_turns": 8}]}, "budget", None),
        ({"datasets": [{"path": "/elsewhere/scope.json", "sha256": "b" * 64}]}, "data", None),
    ],
)
def test_a_difference_that_changes_the_scores_refuses_the_comparison(change: dict[str, Any], field: str, line: str | None) -> None:
    [difference] = refusing(card(**change), card())
    assert difference.field == field and difference.refuses
    if line is not None:
        assert difference.line() == line
    assert refusing(card(**change), card(), accepted=[field]) == []  # accepted by name
    assert refusing(card(), card()) == []


def test_a_difference_that_does_not_change_the_scores_is_shown_never_refused() -> None:
    found = differences(card(QUESTIONS[:1], seed=7, repeat=3, headline={"name": "retrieval_score"}), card())
    assert [d.field for d in found] == ["selection", "headline", "categories", "repetitions", "seed"]
    assert not any(d.refuses for d in found)
    seed = found[-1].line()
    assert seed.startswith("seed differs: this run 7, baseline 42 (the seed draws another sample")


def test_an_unrecorded_field_is_not_checked() -> None:
    old = RunIdentity.model_validate({"agent": {"name": "offline"}}).derived_card([])  # a run written before cards
    assert old.judge is None and old.scoring is None
    found = {d.field: d for d in differences(card(agent={"name": "offline"}), old)}
    assert not found["judge"].refuses and not found["scoring"].refuses
    assert found["judge"].line().endswith("(not recorded by a run written before comparability cards; not checked)")
    assert found["data"].refuses is False  # the old run recorded no data: nothing to compare


def test_the_data_difference_names_the_files_that_differ() -> None:
    ours = card(datasets=[{"path": "/d/a.json", "sha256": "1" * 64}, {"path": "/d/b.json", "sha256": "2" * 64}])
    theirs = card(datasets=[{"path": "/e/a.json", "sha256": "1" * 64}, {"path": "/e/b.json", "sha256": "3" * 64}])
    [difference] = differences(ours, theirs)
    assert difference.line() == "data differs: this run b.json 222222222222, baseline b.json 333333333333"


def test_another_server_for_the_same_models_refuses_on_the_agent_and_the_judge() -> None:
    moved = card(llm={**RUN["llm"], "base_url": "https://api.example.com/v1"})
    assert [d.field for d in refusing(moved, card())] == ["agent", "judge"]


def test_endpoint_kinds() -> None:
    assert endpoint_kind("http://127.0.0.1:8080/v1") == endpoint_kind("http://localhost:1/v1") == "local"
    assert endpoint_kind("https://***@api.example.com/v1?api_key=***") == "api.example.com"
    assert endpoint_kind("https://api.openai.com/v1 (default)") == endpoint_kind(None) == "api.openai.com"


def test_accepted_fields_are_checked_by_name() -> None:
    assert parse_accepted("judge, budget") == ("judge", "budget")
    with pytest.raises(ValueError, match=r"'seed': name the comparability-card fields to accept, from data, budget"):
        parse_accepted("judge,seed")
    assert set(REFUSING) == {"data", "budget", "agent", "judge", "scoring"}


def test_the_card_round_trips_through_the_identity_as_recorded() -> None:
    identity = RunIdentity.model_validate(RUN)
    with_card = identity.model_copy(update={"card": card()})
    back = RunIdentity.model_validate_json(with_card.model_dump_json())
    assert back.card == card() and back.model_dump(mode="json") == with_card.model_dump(mode="json")
    assert "card" not in identity.model_dump(mode="json")  # a run written without one keeps its form
