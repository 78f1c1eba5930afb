"""The optional LLM stage against the real local OpenAI-compatible test server (127.0.0.1 only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.cli.main import main
from pytest_lens.generator import GeneratorError, generate_scope
from tests.unit.generator.llm_support import GeneratorPolicy, chat_client

DOMAIN, SEED = "cascading_failure", 3


@pytest.fixture
def policy() -> GeneratorPolicy:
    return GeneratorPolicy()


@pytest.fixture
def server(policy: GeneratorPolicy) -> Iterator[OpenAITestServer]:
    with OpenAITestServer(policy) as running:
        yield running


def test_model_written_reports_pass_every_check_and_replay_byte_for_byte(server: OpenAITestServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    scope = generate_scope(DOMAIN, SEED, llm=chat_client(server.base_url, cache))  # verify=True: the guarantees hold
    plain = generate_scope(DOMAIN, SEED)
    report = scope.llm_report
    assert report is not None and report.rendered == 120 and not report.fallbacks
    # Planner: one good signal note and one good note per theme kept; numbers and storyline words refused.
    assert report.planner_notes_kept == 4
    assert report.planner_notes_rejected == {"a number or placeholder": 4, "a storyline or other-topic word": 1}
    texts = [e.text for e in scope.dataset.scopes[0].episodes]
    assert all("Weather mild and dry." in t for t in texts)
    assert any("Handover briefing ran to the usual agenda." in t for t in texts)  # a planner note
    assert texts != [e.text for e in plain.dataset.scopes[0].episodes]
    # The storyline, the questions and the key facts are the deterministic planner's.
    assert scope.dataset.questions == plain.dataset.questions
    assert server.count(path="/v1/chat/completions") == 1 + 120

    url = server.base_url
    server.stop()  # replay needs no endpoint at all (the URL stays part of every cache key)
    replayed = generate_scope(DOMAIN, SEED, llm=chat_client(url, cache, mode="replay"))
    assert replayed.to_json() == scope.to_json()


@pytest.mark.parametrize(
    ("flaw", "reason", "count"),
    [
        ("drop_reading", "a planned line is missing", 120),
        ("invent_number", "invented a number", 120),
        ("wrong_sections", "wrong sections", 120),
        ("add_word", "a storyline term in a distractor", 90),
    ],
)
def test_a_report_that_breaks_a_rule_falls_back_to_the_deterministic_text(
    server: OpenAITestServer, policy: GeneratorPolicy, tmp_path: Path, flaw: str, reason: str, count: int
) -> None:
    policy.flaw = flaw
    scope = generate_scope(DOMAIN, SEED, llm=chat_client(server.base_url, tmp_path / "c.sqlite", mode="off"))
    assert scope.llm_report is not None
    assert scope.llm_report.fallbacks == {reason: count}
    assert scope.llm_report.rendered == 120 - count


@pytest.mark.parametrize(
    ("word", "fallbacks"),
    [
        # A print-fleet word: no signal report may add it; distractors may use their own topics' words.
        ("toner", {"a storyline or distractor word added to a signal report": 30}),
        # A word of the root-cause event: only the root-cause report itself already says it.
        ("throttles", {"a storyline or distractor word added to a signal report": 29, "a storyline term in a distractor": 90}),
    ],
)
def test_signal_reports_may_not_add_distractor_or_event_words(
    server: OpenAITestServer, policy: GeneratorPolicy, tmp_path: Path, word: str, fallbacks: dict[str, int]
) -> None:
    policy.flaw, policy.word = "add_word", word
    scope = generate_scope(DOMAIN, SEED, llm=chat_client(server.base_url, tmp_path / "c.sqlite", mode="off"))
    assert scope.llm_report is not None
    assert scope.llm_report.fallbacks == fallbacks


def test_an_endpoint_that_keeps_failing_leaves_the_deterministic_scope(tmp_path: Path) -> None:
    with OpenAITestServer(GeneratorPolicy(), faults=[Fault("status", status=500, permanent=True)]) as server:
        scope = generate_scope(DOMAIN, SEED, llm=chat_client(server.base_url, tmp_path / "c.sqlite", mode="off"))
    assert scope.to_json() == generate_scope(DOMAIN, SEED).to_json()
    assert scope.llm_report is not None and scope.llm_report.fallbacks == {"request failed": 120}


def test_replaying_a_request_that_was_never_recorded_is_an_error(server: OpenAITestServer, tmp_path: Path) -> None:
    generate_scope(DOMAIN, SEED, llm=chat_client(server.base_url, tmp_path / "c.sqlite"))
    with pytest.raises(GeneratorError, match="LLM stage"):
        generate_scope(DOMAIN, SEED + 1, llm=chat_client(server.base_url, tmp_path / "c.sqlite", mode="replay"))


def test_lens_generate_with_an_llm_endpoint(server: OpenAITestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scope.json"
    args = ["generate", "--domain", DOMAIN, "--seed", str(SEED), "--out", str(out), "--llm-cache", str(tmp_path / "c.sqlite")]
    assert main([*args, "--llm-base-url", server.base_url, "--llm-model", "scripted-writer"]) == 0
    printed = capsys.readouterr().out
    assert "LLM renderer (scripted-writer): 120 of 120 reports written by the model, 0 fell back" in printed
    assert "LLM planner (scripted-writer): 4 routine notes kept, 5 rejected" in printed
    assert "Weather mild and dry." in json.loads(out.read_text())["scopes"][0]["episodes"][0]["text"]
    assert main([*args, "--llm-base-url", server.base_url]) == 2
    assert "--llm-base-url needs --llm-model" in capsys.readouterr().out


def test_report_problem_names_the_first_broken_rule() -> None:
    import random

    from lens_fixtures.openai_server import ChatRequest
    from pytest_lens.generator.domains import DOMAINS
    from pytest_lens.generator.llm import RENDERER_SYSTEM_PROMPT, _plan_payload, report_problem
    from pytest_lens.generator.planner import plan_scope

    plan = plan_scope(DOMAINS["clinical_trial"], 2, signal=30, distractors=0, scope_id="s").episodes[20]
    body = {"messages": [{"role": "system", "content": RENDERER_SYSTEM_PROMPT}, {"role": "user", "content": ""}]}
    body["messages"][1]["content"] = json.dumps(_plan_payload(plan, random.Random(1)))
    good = GeneratorPolicy()(ChatRequest(body)).content
    assert report_problem(good, plan) is None
    assert report_problem(good.replace("## ", "# ", 1), plan) == "wrong header"
    assert report_problem(good.replace("### Flags", "### Alerts"), plan) == "wrong sections"
    assert report_problem(good + "\n- Also 987654 extra samples.", plan) == "invented a number"
    assert report_problem(good, plan, forbidden={"velotrazine", "alt"}) == "a storyline term in a distractor"
