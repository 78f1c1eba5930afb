from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any

import pytest

from lens_fixtures.openai_server import (
    ChatRequest,
    Fault,
    JudgePolicy,
    MemeJudgePolicy,
    MemePrompt,
    OpenAITestServer,
    RetrievalAgentPolicy,
    SummaryPolicy,
    classify,
    hashed_embedding,
)
from pytest_lens.agents.base import SYSTEM_PROMPT
from pytest_lens.datasets.key_facts import DELETED_FACT, UNCERTAIN_FACT
from pytest_lens.datasets.models import GroundTruth, KeyFact, Question
from pytest_lens.judging.judge import FACT_PROMPT
from pytest_lens.suites.meme.llm_judge import render_prompt
from pytest_lens.suites.meme.tasks import judge_probe


def post(server: OpenAITestServer, path: str, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(server.base_url.removesuffix("/v1") + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def chat(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}], **extra}


def test_only_loopback_addresses_are_allowed() -> None:
    with pytest.raises(ValueError, match="loopback"):
        OpenAITestServer(host="0.0.0.0")


def test_chat_completions_report_usage_and_are_recorded() -> None:
    with OpenAITestServer() as server:
        status, payload, _ = post(server, "/v1/chat/completions", chat("hi"))
        assert status == 200
        assert payload["choices"][0]["message"] == {"role": "assistant", "content": "OK"}
        usage = payload["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
        assert server.count(path="/v1/chat/completions", kind="other", status=200) == 1
        server.reset()
        assert server.count() == 0


def test_bad_requests_and_unknown_routes_are_json_errors() -> None:
    with OpenAITestServer() as server:
        assert post(server, "/v1/chat/completions", b"{not json")[0] == 400
        status, payload, _ = post(server, "/v1/nothing", {})
        assert status == 404
        assert "no route" in payload["error"]["message"]


def test_embeddings_are_deterministic_unit_vectors_that_reflect_word_overlap() -> None:
    with OpenAITestServer() as server:
        status, payload, _ = post(
            server, "/v1/embeddings", {"model": "e", "input": ["pump vibration rising", "pump vibration", "tax audit"]}
        )
    assert status == 200
    vectors = [item["embedding"] for item in payload["data"]]
    assert [item["index"] for item in payload["data"]] == [0, 1, 2]
    assert all(math.isclose(sum(v * v for v in vec), 1.0, abs_tol=1e-4) for vec in vectors)

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert hashed_embedding("pump vibration", 64) == vectors[1]
    assert len(hashed_embedding("x", 16)) == 16


def test_transient_faults_hit_the_same_requests_every_run_and_let_retries_through() -> None:
    fault = Fault("status", rate=0.3, status=503)
    bodies = [chat(f"question {n}") for n in range(40)]
    with OpenAITestServer(faults=[fault]) as server:
        first = [post(server, "/v1/chat/completions", body)[0] for body in bodies]
        retried = [post(server, "/v1/chat/completions", body)[0] for body in bodies]
    failed = [n for n, status in enumerate(first) if status == 503]
    assert 4 <= len(failed) <= 20
    assert set(retried) == {200}
    with OpenAITestServer(faults=[fault]) as again:
        assert [n for n, body in enumerate(bodies) if post(again, "/v1/chat/completions", body)[0] == 503] == failed


def test_permanent_faults_never_let_a_selected_request_through_and_carry_retry_after() -> None:
    with OpenAITestServer(faults=[Fault("status", status=429, permanent=True, retry_after_ms=7)]) as server:
        results = [post(server, "/v1/chat/completions", chat("x")) for _ in range(3)]
    assert [status for status, _, _ in results] == [429, 429, 429]
    assert results[0][2]["retry-after-ms"] == "7"


def test_faults_can_target_a_kind_a_text_and_a_number_of_firings() -> None:
    faults = [Fault("status", status=500, only="judge", contains="17.9 bar", permanent=True), Fault("content", text="?", limit=1)]
    judge_prompt = FACT_PROMPT.format(question="q", finding="17.9 bar", text_a="a", text_b="b")
    with OpenAITestServer(faults=faults) as server:
        assert post(server, "/v1/chat/completions", chat(judge_prompt))[0] == 500
        assert (
            post(server, "/v1/chat/completions", chat(judge_prompt.replace("17.9", "16.8")))[1]["choices"][0]["message"]["content"] == "?"
        )
        assert post(server, "/v1/chat/completions", chat("other"))[1]["choices"][0]["message"]["content"] == "OK"


def test_malformed_tool_arguments_fault_breaks_the_json() -> None:
    tools = [{"type": "function", "function": {"name": "memory_search", "parameters": {}}}]
    body = {"model": "m", "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "q?"}], "tools": tools}
    with OpenAITestServer(faults=[Fault("malformed_tool_arguments")]) as server:
        _, payload, _ = post(server, "/v1/chat/completions", body)
    arguments = payload["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)


def agent_request(
    messages: list[dict[str, Any]], tools: tuple[str, ...] = ("memory_search", "memory_retrieve"), **extra: Any
) -> ChatRequest:
    specs = [{"type": "function", "function": {"name": name}} for name in tools]
    system = {"role": "system", "content": SYSTEM_PROMPT}
    return ChatRequest(
        {"model": "m", "messages": [system, {"role": "user", "content": "What is pump P-7 vibration?"}, *messages], "tools": specs, **extra}
    )


def tool_turn(call_id: str, name: str, arguments: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result if isinstance(result, str) else json.dumps(result)},
    ]


def test_retrieval_agent_policy_searches_retrieves_then_answers_citing() -> None:
    policy = RetrievalAgentPolicy(top_k=2)
    assert classify(agent_request([])) == "agent"
    step1 = policy(agent_request([]))
    assert step1.tool_calls == (("memory_search", {"query": "What is pump P-7 vibration?", "limit": 10}),)
    hits = [{"ref_id": "r1", "text": "P-7"}, {"ref_id": "r2", "text": "x"}, {"ref_id": "r3", "text": "y"}]
    searched = tool_turn("c1", "memory_search", {"query": "q"}, hits)
    step2 = policy(agent_request(searched))
    assert step2.tool_calls == (("memory_retrieve", {"ref_id": "r1"}), ("memory_retrieve", {"ref_id": "r2"}))
    step2b = policy(agent_request(searched, tools=("memory_search", "batch_retrieve")))
    assert step2b.tool_calls == (("batch_retrieve", {"ref_ids": ["r1", "r2"]}),)
    retrieved = searched + tool_turn(
        "c2", "memory_retrieve", {"ref_id": "r1"}, {"ref_id": "r1", "text": "# Log 2025-01-02\n- Pump P-7 vibration: 4.1 mm/s [HIGH]"}
    )
    retrieved += tool_turn("c3", "memory_retrieve", {"ref_id": "r2"}, "Error: no document with ref_id 'r2'")
    answer = policy(agent_request(retrieved))
    assert answer.content == "- 2025-01-02: Pump P-7 vibration: 4.1 mm/s (HIGH) [r1]"
    assert policy(agent_request([], tool_choice="none")).content.startswith("I could not find")


def test_retrieval_agent_policy_retries_a_failed_search_once_then_gives_up() -> None:
    policy = RetrievalAgentPolicy()
    failed = tool_turn("c1", "memory_search", {"query": "q"}, "Error: tool arguments are not valid JSON")
    assert policy(agent_request(failed)).tool_calls[0][0] == "memory_search"
    twice = failed + tool_turn("c2", "memory_search", {"query": "q"}, [])
    assert policy(agent_request(twice)).content.startswith("I could not find")


@pytest.mark.parametrize(
    ("finding", "a", "b", "verdict"),
    [
        ("17.9 bar", "rose to 17.9 bar", "stable", "A"),
        ("17.9 bar", "stable", "rose to 17.9 bar", "B"),
        ("17.9 bar", "17.9 bar", "17.9 bar!", "TIE"),
        ("95 min (equivalent wording: 95 minutes)", "for 95 minutes", "for a while", "A"),
    ],
)
def test_judge_policy_compares_fact_coverage(finding: str, a: str, b: str, verdict: str) -> None:
    prompt = FACT_PROMPT.format(question="q", finding=finding, text_a=a, text_b=b)
    request = ChatRequest(chat(prompt))
    assert classify(request) == "judge"
    assert JudgePolicy()(request).content == verdict


def test_summary_policy_keeps_numbered_lines_and_the_previous_summary() -> None:
    first = ChatRequest(
        chat("Current summary:\n(empty)\n\nNew records:\n### Record (2025-01-01T08:00:00)\n## Log\n- P-7: 4.1 mm/s\n- all quiet")
    )
    text = SummaryPolicy()(first).content
    assert text == "- 2025-01-01: P-7: 4.1 mm/s"
    second = ChatRequest(chat(f"Current summary:\n{text}\n\nNew records:\n### Record (2025-01-02T08:00:00)\n- P-7: 4.6 mm/s"))
    assert SummaryPolicy(max_lines=1)(second).content == "- 2025-01-02: P-7: 4.6 mm/s"


def meme_probe(task: str, phase: str, values: list[str], stale: tuple[str, ...] = ()) -> Question:
    facts = {"absence": [UNCERTAIN_FACT], "deletion": [DELETED_FACT]}.get(task) if phase == "after" else None
    return Question(
        question_id="q",
        scope_id="s",
        checkpoint_after=1,
        question_type=task,
        prompt="Who reviews our code?",
        ground_truth=GroundTruth(canonical_answer="Ciaran Moss", key_facts=tuple(facts or [KeyFact(fact=v) for v in values])),
        phase=phase,  # type: ignore[arg-type]
        stale_values=stale,
    )


MEME_PROBES = [
    meme_probe("cascade", "before", ["Zofia Kestrel"]),
    meme_probe("tracking", "after", ["Birchwood", "Calloway", "Danforth"]),
    meme_probe("aggregation", "after", ["Tuesday afternoons", "weekly on Thursdays"]),
    meme_probe("cascade", "after", ["Ciaran Moss"], ("Zofia Kestrel",)),
    meme_probe("absence", "after", [], ("Mikkel Dane",)),
    meme_probe("deletion", "after", [], ("Quillon",)),
]


@pytest.mark.parametrize("question", MEME_PROBES, ids=lambda q: f"{q.question_type}-{q.phase}")
def test_meme_prompts_read_back_to_the_probe_they_were_made_from(question: Question) -> None:
    answer = "Line one: Ciaran Moss.\n\n<answer> is not a delimiter here"
    prompt = MemePrompt.parse(render_prompt(question, answer))
    assert prompt.kind == ("before" if question.phase == "before" else question.question_type)
    assert prompt.answer == answer
    rebuilt = prompt.question_model()
    assert rebuilt.stale_values == question.stale_values
    if question.question_type not in ("absence", "deletion") or question.phase == "before":
        assert rebuilt.ground_truth.key_facts == question.ground_truth.key_facts
    assert classify(ChatRequest(chat(render_prompt(question, answer)))) == "meme_judge"
    with pytest.raises(ValueError, match="not a MEME judge prompt"):
        MemePrompt.parse("You are grading something else.")


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Ciaran Moss reviews it now.", {"correct": True}),
        ("Zofia Kestrel, or Ciaran Moss.", {"correct": False}),
        ("If the lead changes it will be Ciaran Moss.", {"correct": False}),
    ],
)
def test_meme_judge_policy_applies_the_mechanical_rules_in_json(answer: str, verdict: dict[str, bool]) -> None:
    question = MEME_PROBES[3]
    reply = json.loads(MemeJudgePolicy()(ChatRequest(chat(render_prompt(question, answer)))).content)
    assert reply == {**verdict, "reason": f"Mechanical rule: {judge_probe(question, answer).reason}."}


def test_meme_judge_policy_lists_each_aggregation_value() -> None:
    reply = json.loads(MemeJudgePolicy()(ChatRequest(chat(render_prompt(MEME_PROBES[2], "Every Tuesday afternoons.")))).content)
    assert reply["results"] == [{"value": "Tuesday afternoons", "present": True}, {"value": "weekly on Thursdays", "present": False}]
    assert reply["correct"] is False


def test_meme_judge_policy_misbehaves_as_asked() -> None:
    cascade = chat(render_prompt(MEME_PROBES[3], "Ciaran Moss."))
    aggregation = chat(render_prompt(MEME_PROBES[2], "Tuesday afternoons."))
    prose = MemeJudgePolicy(flaw="prose")(ChatRequest(cascade)).content
    assert prose == "The answer is correct: new value stated as the sole answer."
    assert set(json.loads(MemeJudgePolicy(flaw="missing_field")(ChatRequest(cascade)).content)) == {"reason"}
    assert set(json.loads(MemeJudgePolicy(flaw="missing_field")(ChatRequest(aggregation)).content)) == {"correct", "reason"}
    only_before = MemeJudgePolicy(flaw="prose", flawed_kinds=("before",))
    assert json.loads(only_before(ChatRequest(cascade)).content)["correct"] is True
    repaired = {
        **cascade,
        "messages": [*cascade["messages"], {"role": "assistant", "content": prose}, {"role": "user", "content": "JSON!"}],
    }
    assert json.loads(MemeJudgePolicy(flaw="prose", repairable=True)(ChatRequest(repaired)).content)["correct"] is True
    assert MemeJudgePolicy(flaw="prose")(ChatRequest(repaired)).content == prose


SEARCH_TOOL = {"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object"}}}


def agent_chat(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "q?"}], **extra}


def test_llama_cpp_mode_hides_the_tools_unless_a_tool_choice_is_sent() -> None:
    with OpenAITestServer(tools_need_choice=True) as server:
        _, hidden, _ = post(server, "/v1/chat/completions", agent_chat(tools=[SEARCH_TOOL]))
        _, seen, _ = post(server, "/v1/chat/completions", agent_chat(tools=[SEARCH_TOOL], tool_choice="auto"))
    assert "tool_calls" not in hidden["choices"][0]["message"]
    assert seen["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "memory_search"
    assert hidden["usage"]["prompt_tokens"] < seen["usage"]["prompt_tokens"]  # the tools were not in the prompt


def test_strict_messages_refuses_null_assistant_content_like_llama_cpp_python() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q?"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "[]"},
    ]
    with OpenAITestServer(strict_messages=True) as server:
        status, body, _ = post(server, "/v1/chat/completions", {"model": "m", "messages": history})
        history[1]["content"] = ""
        accepted, _, _ = post(server, "/v1/chat/completions", {"model": "m", "messages": history})
    assert status == 500
    assert "('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content')" in body["error"]["message"]
    assert accepted == 200


def test_a_rambling_model_stops_only_at_max_tokens_or_the_context() -> None:
    with OpenAITestServer(faults=[Fault("ramble", permanent=True)], context_tokens=600) as server:
        _, bounded, _ = post(server, "/v1/chat/completions", chat("Tell me.", max_tokens=40))
        _, unbounded, _ = post(server, "/v1/chat/completions", chat("Tell me."))
    assert (bounded["choices"][0]["finish_reason"], bounded["usage"]["completion_tokens"]) == ("length", 40)
    assert "tool_calls" not in bounded["choices"][0]["message"]
    assert unbounded["usage"]["completion_tokens"] + unbounded["usage"]["prompt_tokens"] == 600  # the context filled up


def test_prompts_too_long_for_the_context_are_refused_with_the_servers_message() -> None:
    long = "word " * 500
    with OpenAITestServer(context_tokens=300, context_error="llama.cpp") as server:
        status, body, _ = post(server, "/v1/chat/completions", chat(long, max_tokens=10))
        fits, _, _ = post(server, "/v1/chat/completions", chat("short", max_tokens=10))
    assert (status, fits) == (400, 200)
    error = body["error"]
    assert error["type"] == "exceed_context_size_error"
    assert error["n_ctx"] == 300
    prompt = error["n_prompt_tokens"]
    assert error["message"] == f"request ({prompt} tokens) exceeds the available context size (300 tokens), try increasing it"


RECORD = "Record (2024-01-02T10:00:00):\n## Ops\n- Pump-7 vibration 9.8 mm/s at North Station\n- the kqv7zt valve opened"


def _memory_requests() -> dict[str, dict[str, Any]]:
    """One memory-building request of each system, as the adapters send it (the parts the policies read)."""
    from lens_fixtures.adapters.graphrag_light import GRAPH_EXTRACTION_PROMPT
    from lens_fixtures.adapters.hierarchical import EPISODE_PROMPT
    from lens_fixtures.openai_server.extraction import MEM0_MARKER
    from lens_fixtures.openai_server.extraction_cognee import SCHEMA_MARKER
    from lens_fixtures.openai_server.extraction_graphiti import GRAPHITI_SCHEMA_MARKER

    def schema(title: str, **properties: Any) -> str:
        return json.dumps({"title": title, "type": "object", "properties": properties, "required": list(properties)})

    entities = schema("ExtractedEntities", extracted_entities={"type": "array"})
    graphiti = f"<CURRENT_MESSAGE>\n{RECORD}\n</CURRENT_MESSAGE>{GRAPHITI_SCHEMA_MARKER}{entities}"
    graph = schema("KnowledgeGraph", nodes={"type": "array"}, edges={"type": "array"})
    cognee_system = f"Extract a knowledge graph.\n{SCHEMA_MARKER}\n```json\n{graph}\n```"
    letta_names = ("send_message", "conversation_search", "memory_insert")
    letta_tools = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in letta_names]
    mem0_user = f"## New Messages\nuser: {RECORD}\n\n## Observation Date\n2024-01-02"
    return {
        "mem0": {"messages": [{"role": "system", "content": MEM0_MARKER}, {"role": "user", "content": mem0_user}]},
        "graphrag-light": {"messages": [{"role": "system", "content": GRAPH_EXTRACTION_PROMPT}, {"role": "user", "content": RECORD}]},
        "graphiti": {"messages": [{"role": "user", "content": graphiti}]},
        "cognee": {"messages": [{"role": "system", "content": cognee_system}, {"role": "user", "content": RECORD}]},
        "letta": {"messages": [{"role": "system", "content": "You are Letta."}, {"role": "user", "content": RECORD}], "tools": letta_tools},
        "hierarchical": {"messages": [{"role": "system", "content": EPISODE_PROMPT}, {"role": "user", "content": RECORD}]},
    }


@pytest.mark.parametrize("system", ["mem0", "graphrag-light", "graphiti", "cognee", "letta", "hierarchical"])
def test_the_empty_extractor_answers_each_systems_prompt_well_formed_with_nothing_in_it(system: str) -> None:
    from lens_fixtures.openai_server import EmptyExtractionPolicy, LensPolicy
    from lens_fixtures.openai_server.empty import EMPTY_SUMMARY

    request = ChatRequest({"model": "m", **_memory_requests()[system]})
    scripted, empty = LensPolicy()(request), EmptyExtractionPolicy()(request)
    if system == "letta":  # the scripted agent writes core memory; the empty one only ends its turn
        assert scripted.tool_calls[0][0] == "memory_insert" and "9.8 mm/s" in str(scripted.tool_calls[0][1])
        assert empty.tool_calls == (("send_message", {"message": "Noted."}),)
        return
    if system == "hierarchical":
        assert "9.8 mm/s" in scripted.content and empty.content == EMPTY_SUMMARY
        return
    built, nothing = json.loads(scripted.content), json.loads(empty.content)
    assert set(built) == set(nothing)  # the same shape: every key the system reads
    assert any(built.values()) and not any(nothing.values())  # the scripted extractor keeps the record, the empty one nothing
    assert "kqv7zt" in scripted.content  # a rare identifier is a named thing (a fact's word for mem0)


def test_the_empty_extractor_leaves_the_other_roles_to_its_base_policy() -> None:
    from lens_fixtures.openai_server import EmptyExtractionPolicy, LensPolicy

    agent = ChatRequest({"model": "m", "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "q?"}]})
    assert EmptyExtractionPolicy(base=LensPolicy())(agent) == LensPolicy()(agent)
    unknown = ChatRequest({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})
    assert EmptyExtractionPolicy()(unknown).content == "{}"  # an unknown system's JSON mode: an empty object


def test_the_server_starts_on_its_own_and_serves_until_stopped() -> None:
    import signal
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "lens_fixtures.openai_server", "--port", "0", "--empty-extraction"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert "(empty extractor) at http://127.0.0.1:" in line
        base_url = line.split(" at ", 1)[1].split(";", 1)[0]
        body = json.dumps({"model": "m", **_memory_requests()["graphrag-light"]}).encode()
        request = urllib.request.Request(base_url + "/chat/completions", data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.loads(response.read())["choices"][0]["message"]["content"]
        assert json.loads(reply) == {"entities": [], "relations": []}
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
