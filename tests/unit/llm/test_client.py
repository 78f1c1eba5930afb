from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import CONTEXT_ERROR_STYLES, Fault, OpenAITestServer, Reply, ScriptedAgentPolicy
from pytest_lens.llm import api_keys
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, ChatReply, LLMEndpoint, LLMRequestError, LLMResponseError, context_overflow
from pytest_lens.llm.errors import LLMCacheMiss, LLMContextLengthError, LLMTimeoutError
from pytest_lens.llm.settings import DEFAULT_MAX_TOKENS
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


def test_the_first_completion_is_signalled_whether_sent_or_cached(server: OpenAITestServer, tmp_path: Path) -> None:
    sender = make_client(server, tmp_path)
    assert not sender.endpoint.requested.is_set()
    sender.complete(HELLO)
    assert sender.endpoint.requested.is_set()  # sent: the warm-up may use the processor while the model answers
    cached = make_client(server, tmp_path)  # a new endpoint over the same cache: every completion is a hit
    cached.complete(HELLO)
    assert server.count() == 1
    assert cached.endpoint.requested.is_set()  # found in the cache: the warm-up must not wait for a request never sent


def test_tool_calls_come_back_with_raw_arguments(tmp_path: Path) -> None:
    script = ScriptedAgentPolicy([[("memory_search", {"query": "x"}), ("memory_retrieve", '{"ref_id": ')]])
    with OpenAITestServer(script) as server:
        reply = make_client(server, tmp_path).complete(HELLO, tools=[{"type": "function", "function": {"name": "memory_search"}}])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("memory_search", '{"query": "x"}'), ("memory_retrieve", '{"ref_id": ')]
    assert reply.finish_reason == "tool_calls"
    assert reply.assistant_message()["tool_calls"][1]["function"]["arguments"] == '{"ref_id": '
    assert reply.assistant_message()["content"] == ""  # never null: llama-cpp-python refuses a null content


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


def test_a_key_quoted_in_a_prompt_is_masked_alike_when_recorded_and_when_replayed(
    tmp_path: Path, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local server's placeholder key ("none-key") is also a word of the records the prompts quote.
    monkeypatch.setenv("LENS_TEST_KEY", "none-key")
    prompts = [[{"role": "user", "content": f"record {i}: the valve was set to none-key mode"}] for i in range(2)]
    monkeypatch.setattr(api_keys, "_known", set())
    recorder = make_client(server, tmp_path)
    for prompt in prompts:
        recorder.complete(prompt)
    monkeypatch.setattr(api_keys, "_known", set())  # a new process: it knows no key yet
    replay = make_client(server, tmp_path, mode="replay")  # never connects
    assert all(replay.complete(prompt).cached for prompt in prompts)
    assert server.count() == 2


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


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("not_json", r"a body that is not JSON \(text/html, \d+ bytes: '<html><head><title>502 Bad Gateway"),
        ("truncated", r"a body cut off mid-JSON \(application/json, \d+ bytes: '\{\"id\""),
    ],
)
def test_a_200_that_is_not_a_completion_is_retried_and_counted(tmp_path: Path, kind: str, problem: str) -> None:
    with OpenAITestServer(faults=[Fault(kind, times=2)]) as server:  # type: ignore[arg-type]
        client = make_client(server, tmp_path)
        reply = client.complete(HELLO)
        assert server.count(status=200) == 3
    assert reply.content == "OK"
    assert client.stats.snapshot() == LLMCounts(requests=1, cache_misses=1, http_requests=3, retries=2, bad_responses=2, recovered=1)
    with OpenAITestServer(faults=[Fault(kind, permanent=True)]) as server:  # type: ignore[arg-type]
        client = make_client(server, tmp_path, mode="off")
        with pytest.raises(LLMRequestError, match=f"failed after 4 attempts: unusable 200 response: {problem}"):
            client.complete(HELLO)
    assert client.stats.snapshot() == LLMCounts(requests=1, cache_misses=1, http_requests=4, retries=3, bad_responses=4, failures=1)


@pytest.mark.parametrize("style", CONTEXT_ERROR_STYLES)
def test_a_prompt_too_long_for_the_context_is_a_context_length_error_not_retried(tmp_path: Path, style: str) -> None:
    long = [{"role": "user", "content": "word " * 400}]
    with OpenAITestServer(context_tokens=300, context_error=style) as server:  # type: ignore[arg-type]
        client = make_client(server, tmp_path, mode="off")
        with pytest.raises(LLMContextLengthError) as caught:
            client.complete(long, max_tokens=50)
        assert server.count(status=400) == 1  # a resend would be just as long
        prompt = server.prompt_tokens(server.requests[0].body)
        assert client.complete(HELLO, max_tokens=50).content == "OK"  # short prompts still fit
        url = server.base_url
    assert caught.value.limit == 300
    assert caught.value.prompt_tokens == prompt
    assert str(caught.value).startswith(f"LLM request to {url} failed: HTTP 400: ")


@pytest.mark.parametrize(
    ("status", "body", "message", "expected"),
    [
        (400, {"code": "context_length_exceeded"}, "This model's maximum context length is 8192 tokens. However, "
         "your messages resulted in 12077 tokens.", (8192, 12077)),
        (400, {}, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
         "(4000 in the messages, 1000 in the completion).", (4096, 4000)),
        (400, {"type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096},
         "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it", (4096, 4476)),
        (400, {}, "Requested tokens (9000) exceed context window of 8192", (8192, 9000)),
        (413, {}, "prompt is too long", (None, None)),
        (400, {}, "temperature must be between 0 and 2", None),
        (500, {"code": "context_length_exceeded"}, "maximum context length is 10", None),
    ],
)
def test_context_length_errors_are_recognised_in_every_dialect(
    status: int, body: dict[str, object], message: str, expected: tuple[int | None, int | None] | None
) -> None:
    assert context_overflow(status, body, message) == expected


def test_every_request_carries_max_tokens(server: OpenAITestServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path, mode="off")
    client.complete(HELLO)
    client.with_max_tokens(64).complete(HELLO)
    client.complete(HELLO, max_tokens=8)
    client.with_model("other").complete(HELLO, tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
    client.complete(HELLO, tool_choice="auto")  # no tools: no tool_choice (servers reject one)
    bodies = [r.body for r in server.requests]
    assert [body["max_tokens"] for body in bodies] == [DEFAULT_MAX_TOKENS, 64, 8, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS]
    assert [body.get("tool_choice") for body in bodies] == [None, None, None, "auto", None]
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        client.with_max_tokens(0)


def test_the_llm_timeout_bounds_a_whole_response_not_each_read() -> None:
    # Issue 32, defect 3: with --lens-llm-timeout=5, a 270-byte body sent one byte per 0.5 s took 135 s.
    import json
    import socket
    import threading
    import time

    body = json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode().ljust(270)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
            for byte in body:
                if stop.wait(0.1):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    server = threading.Thread(target=drip, daemon=True)
    server.start()
    endpoint = LLMEndpoint(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", api_key_env="LENS_TEST_KEY", timeout_s=1.0, retries=0)
    endpoint.connect()  # importing openai is not the request's time
    started = time.monotonic()
    try:
        with pytest.raises(LLMTimeoutError, match=r"no answer within 1 s \(--lens-llm-timeout\)"):
            endpoint.create({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, LLMStats())
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 3.0  # the drip would take 27 s


def test_each_counting_block_collects_the_cache_keys_of_its_requests(server: OpenAITestServer, tmp_path: Path) -> None:
    import contextvars
    import sqlite3
    import threading

    from pytest_lens.llm.stats import counting

    client = make_client(server, tmp_path)
    with counting() as outer:
        client.complete(HELLO)
        with counting() as inner:
            client.complete([{"role": "user", "content": "again"}])
            client.complete(HELLO)  # a cache hit is still a request a replay needs
        worker = threading.Thread(target=contextvars.copy_context().run, args=(client.complete, [{"role": "user", "content": "t"}]))
        worker.start()
        worker.join()
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        rows = db.execute("SELECT key, json_extract(request, '$.messages[0].content') FROM llm_responses")
        stored = {content: key for key, content in rows}
    assert inner.requested() == sorted([stored["again"], stored["hello"]])
    assert outer.requested() == sorted(stored.values())  # the thread ran in a copy of the block's context
    assert client.stats.requested() == []  # the process's own counters keep no keys
