from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer, Reply, ScriptedAgentPolicy
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, ChatReply, LLMEndpoint, LLMRequestError, LLMResponseError
from pytest_lens.llm.errors import LLMCacheMiss
from pytest_lens.llm.stats import LLMCounts, LLMStats

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def make_client(server: OpenAITestServer, tmp_path: Path, mode: str = "record", **endpoint: object) -> ChatClient:
    options: dict[str, object] = {"api_key_env": "LENS_TEST_KEY", "timeout_s": 5.0, "retries": 3, "backoff_base_s": 0.001}
    options.update(endpoint)
    return ChatClient(
        LLMEndpoint(server.base_url, **options),  # type: ignore[arg-type]
        "scripted",
        cache=RequestCache(tmp_path / "cache.sqlite", mode),  # type: ignore[arg-type]
        stats=LLMStats(),
        seed=7,
    )


def test_a_completion_goes_through_the_real_openai_client_and_is_cached(server: OpenAITestServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    first = client.complete(HELLO, purpose="test")
    assert first.content == "OK"
    assert not first.cached
    assert first.usage is not None
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens > 0
    body = server.requests[0].body
    assert body["temperature"] == 0
    assert body["seed"] == 7
    assert body["model"] == "scripted"
    again = client.complete(HELLO, purpose="test")
    assert again.cached
    assert again.content == "OK"
    assert server.count() == 1
    assert client.stats.snapshot() == LLMCounts(requests=2, cache_hits=1, cache_misses=1, http_requests=1)


def test_tool_calls_come_back_with_raw_arguments(tmp_path: Path) -> None:
    script = ScriptedAgentPolicy([[("memory_search", {"query": "x"}), ("memory_retrieve", '{"ref_id": ')]])
    with OpenAITestServer(script) as server:
        reply = make_client(server, tmp_path).complete(HELLO, tools=[{"type": "function", "function": {"name": "memory_search"}}])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("memory_search", '{"query": "x"}'), ("memory_retrieve", '{"ref_id": ')]
    assert reply.finish_reason == "tool_calls"
    assert reply.assistant_message()["tool_calls"][1]["function"]["arguments"] == '{"ref_id": '


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_errors_are_retried(tmp_path: Path, status: int) -> None:
    with OpenAITestServer(faults=[Fault("status", status=status, times=2)]) as server:
        client = make_client(server, tmp_path)
        assert client.complete(HELLO).content == "OK"
        assert [r.status for r in server.requests] == [status, status, 200]
    counts = client.stats.snapshot()
    assert (counts.http_requests, counts.retries, counts.failures) == (3, 2, 0)


def test_a_timeout_is_retried(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("slow", delay_s=1.5)]) as server:
        client = make_client(server, tmp_path, timeout_s=0.3)
        assert client.complete(HELLO).content == "OK"
    assert client.stats.snapshot().retries == 1


def test_permanent_failures_give_up_after_the_retries_and_are_not_cached(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("status", status=500, permanent=True)]) as server:
        client = make_client(server, tmp_path, retries=2)
        with pytest.raises(LLMRequestError, match=r"failed after 3 attempts: HTTP 500: injected fault"):
            client.complete(HELLO)
        assert server.count() == 3
    assert len(client.cache) == 0
    assert client.stats.snapshot().failures == 1


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_are_not_retried(tmp_path: Path, status: int) -> None:
    with OpenAITestServer(faults=[Fault("status", status=status, permanent=True)]) as server:
        client = make_client(server, tmp_path)
        with pytest.raises(LLMRequestError, match=f"HTTP {status}"):
            client.complete(HELLO)
        assert server.count() == 1


def test_an_unreachable_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        url = server.base_url
    client = ChatClient(
        LLMEndpoint(url, api_key_env="LENS_TEST_KEY", retries=1, backoff_base_s=0.001),
        "m",
        cache=RequestCache(tmp_path / "c.sqlite", "off"),
        stats=LLMStats(),
    )
    with pytest.raises(LLMRequestError, match=r"failed after 2 attempts: APIConnectionError"):
        client.complete(HELLO)


def test_the_api_key_is_sent_but_never_stored_or_shown(tmp_path: Path, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-lens-test-0123456789-secret"
    monkeypatch.setenv("LENS_TEST_KEY", secret)
    client = make_client(server, tmp_path)
    client.complete(HELLO)
    assert server.requests[0].authorization == f"Bearer {secret}"
    client.cache.close()
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes()
    assert secret not in repr(client) + repr(client.endpoint) + client.description


def test_the_api_key_is_scrubbed_from_error_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-lens-test-echoed-secret"
    monkeypatch.setenv("LENS_TEST_KEY", secret)
    echo = Fault("status", status=401, permanent=True, text=f"Incorrect API key provided: {secret}")
    with OpenAITestServer(faults=[echo]) as server, pytest.raises(LLMRequestError) as caught:
        make_client(server, tmp_path).complete(HELLO)
    assert "check the API key in $LENS_TEST_KEY" in str(caught.value)
    assert secret not in str(caught.value)


def test_replay_answers_from_the_cache_only(tmp_path: Path, server: OpenAITestServer) -> None:
    make_client(server, tmp_path).complete(HELLO)
    replay = make_client(server, tmp_path, mode="replay")
    assert replay.complete(HELLO).cached
    with pytest.raises(LLMCacheMiss, match="the judge request to scripted"):
        replay.complete([{"role": "user", "content": "never asked"}], purpose="judge")
    assert server.count() == 1


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({}, "no choices"),
        ({"choices": [{"message": None}]}, "no message"),
        ({"choices": [{"message": {"content": 3}}]}, "not text"),
        ({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, "no function name"),
    ],
)
def test_malformed_completions_are_rejected(response: dict[str, object], message: str) -> None:
    with pytest.raises(LLMResponseError, match=message):
        ChatReply.from_response(response)


def test_object_arguments_are_normalised_to_json_text() -> None:
    reply = ChatReply.from_response(
        {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c1", "function": {"name": "t", "arguments": {"a": 1}}}]}}]}
    )
    assert reply.tool_calls[0].arguments == '{"a": 1}'
    assert reply.content == ""


def test_reply_content_fault_replaces_text(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("content", text="maybe?")]) as server:
        assert make_client(server, tmp_path).complete(HELLO).content == "maybe?"


def test_policies_reply_dataclass_defaults() -> None:
    assert Reply() == Reply(content="", tool_calls=())
