"""Fitting the server: what it serves at once (llama.cpp's /props and /slots), no duplicate queued behind abandoned work,
timeouts sized to the request and named with the options that change them. Against the project's test server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.capacity import MAX_SLOTS, PROBE_TIMEOUT_S, probe_capacity, server_root
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.errors import LLMTimeoutError
from pytest_lens.llm.settings import auto_timeout_s
from pytest_lens.llm.stats import LLMStats

MESSAGES = [{"role": "user", "content": "Summarise the freezer readings."}]


def endpoint(server: OpenAITestServer, **options: float) -> LLMEndpoint:
    return LLMEndpoint(server.base_url, api_key_env="LENS_TEST_UNSET_KEY", backoff_base_s=0.01, **options)  # type: ignore[arg-type]


def test_the_server_root_drops_the_api_path() -> None:
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://127.0.0.1:8080") == "http://127.0.0.1:8080"


def test_a_llama_cpp_like_server_says_its_slots_and_context() -> None:
    with OpenAITestServer(slots=3, context_tokens=4096) as server:
        capacity = probe_capacity(server.base_url)
        assert capacity.slots == 3
        assert capacity.context_tokens == 4096
        assert capacity.slots_url is not None and capacity.idle_slots() == 3
        assert server.probes == ["/props", "/slots", "/slots"]
        assert server.requests == []  # probes ask nothing of the model
    assert "serves 3 request(s) at once (llama.cpp /props and /slots, 4,096 tokens of context each)" in capacity.describe()


@pytest.mark.parametrize("options", [{}, {"slots": 2, "advertise_slots": False}], ids=["no_slots", "silent_slots"])
def test_a_server_that_does_not_say_has_an_unknown_capacity(options: dict[str, object]) -> None:
    with OpenAITestServer(**options) as server:  # type: ignore[arg-type]
        capacity = probe_capacity(server.base_url)
    assert capacity.slots is None and capacity.slots_url is None
    assert "capacity unknown" in capacity.describe()


def test_connecting_fits_the_in_flight_limit_to_the_slots() -> None:
    with OpenAITestServer(slots=2) as server:
        ep = endpoint(server, max_connections=16)
        ep.connect()
    assert ep.limiter.limit == ep.limiter.maximum == 2
    assert ep.limiter.fitted == 2


def test_a_timeout_waits_for_the_slot_so_the_retry_is_not_queued_behind_the_abandoned_work() -> None:
    # The first attempt takes 1.2 s in the only slot; the client gives up after 0.5 s and retries.
    slow = Fault("slow", delay_s=1.2, times=1)
    with OpenAITestServer(slots=1, faults=[slow]) as server:
        stats = LLMStats()
        endpoint(server, timeout_s=0.5, retries=1).create({"model": "m", "messages": MESSAGES, "max_tokens": 8}, stats)
        retry = server.requests[-1]
    assert stats.snapshot().recovered == 1 and stats.snapshot().retries == 1
    assert retry.queued_s < 0.3  # sent once the slot was free, not queued behind the abandoned generation
    assert stats.load().wait_s >= 0.5  # the wait is counted as queueing, on this side


def test_without_slots_to_read_the_retry_queues_behind_the_abandoned_work_and_times_out_too() -> None:
    # What the probe avoids where the server says: the duplicate work, reproduced.
    slow = Fault("slow", delay_s=1.5, times=1)
    with OpenAITestServer(slots=1, faults=[slow], advertise_slots=False) as server:
        ep = endpoint(server, timeout_s=0.5, retries=1, max_connections=4)
        with pytest.raises(LLMTimeoutError):
            ep.create({"model": "m", "messages": MESSAGES, "max_tokens": 8}, LLMStats())
        deadline = time.monotonic() + 5
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        retry = server.requests[-1]
        assert server.duplicates() == 1
    assert retry.queued_s >= 0.5  # it waited behind the generation its own first attempt had abandoned
    assert ep.limiter.limit == 1  # the timeout halved the limit (capacity unknown): fewer in flight from now on


def test_the_timeout_is_sized_to_the_request_unless_given() -> None:
    auto = LLMEndpoint("http://127.0.0.1:9/v1", api_key_env="X")
    assert auto.request_timeout({"max_tokens": 512, "messages": MESSAGES}) == auto_timeout_s(512, len(MESSAGES[0]["content"]))
    assert auto_timeout_s(512, 0) == 188.0
    assert auto_timeout_s(512, 64_000) > auto_timeout_s(512, 0) + 150  # a 16k-token prompt needs its reading time
    assert LLMEndpoint(None, api_key_env="X", timeout_s=30).request_timeout({"max_tokens": 4096}) == 30


def test_a_timeout_message_names_the_timeout_the_token_cap_and_the_options(tmp_path: object) -> None:
    with OpenAITestServer(slots=1, faults=[Fault("slow", delay_s=1.0, permanent=True)]) as server:
        stats = LLMStats()
        cache = RequestCache(tmp_path / "c.sqlite", "off")  # type: ignore[operator]
        client = ChatClient(endpoint(server, timeout_s=0.3, retries=0), "m", cache=cache, stats=stats, max_tokens=64)
        with pytest.raises(LLMTimeoutError) as raised:
            client.complete(MESSAGES, purpose="agent")
    message = str(raised.value)
    for part in ("no answer within 0.3 s", "--lens-llm-timeout", "up to 64 tokens", "--lens-agent-max-tokens", "not a down endpoint"):
        assert part in message
    assert "serves 1 request(s) at once" in message
    assert stats.snapshot().failures == 1


def send_together(endpoints: list[LLMEndpoint], each: int = 3) -> None:
    """Every endpoint (a process of the run, as an xdist worker would be) sends ``each`` requests from threads at once."""
    import threading

    def send(ep: LLMEndpoint, index: int) -> None:
        ep.create({"model": "m", "messages": [{"role": "user", "content": f"question {index}"}], "max_tokens": 8}, LLMStats())

    threads = [threading.Thread(target=send, args=(ep, n * 10 + i)) for n, ep in enumerate(endpoints) for i in range(each)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "each_its_own"])
def test_endpoints_sharing_a_directory_keep_the_servers_slots_between_them(shared: bool, tmp_path: Path) -> None:
    with OpenAITestServer(slots=1, faults=[Fault("slow", delay_s=0.2, permanent=True)]) as server:
        endpoints = [endpoint(server), endpoint(server)]
        endpoints[0].share_slots(tmp_path if shared else None)
        endpoints[0].connect()
        endpoints[1].connect()
        endpoints[1].share_slots(tmp_path if shared else None)  # before or after connecting: the same
        send_together(endpoints)
        assert len(server.requests) == 6 and server.duplicates() == 0
        peak = server.peak_in_flight
    assert all(ep.limiter.limit == 1 for ep in endpoints)
    assert peak == (1 if shared else 2)  # each endpoint alone keeps one in flight: two at the server


def test_a_server_that_does_not_say_its_slots_is_not_shared(tmp_path: Path) -> None:
    with OpenAITestServer(slots=1, advertise_slots=False) as server:
        ep = endpoint(server)
        ep.share_slots(tmp_path)
        ep.connect()
    assert ep.limiter.shared is None  # the adaptive limit of each process, as before
    assert list(tmp_path.iterdir()) == []


# -- hostile /props (issue 46): through the run's HTTP client, its redirect, deadline and size rules --------------


class Recorder:
    """A real HTTP server on 127.0.0.1 whose ``GET`` answers come from ``answer(handler)``; it records each request's headers."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        seen: list[dict[str, str]] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append({name.lower(): value for name, value in self.headers.items()})
                answer(self)

            def log_message(self, format: str, *args: object) -> None: ...

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_answer(document: object) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = json.dumps(document).encode()
        handler.send_response(200)
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def test_a_props_redirect_to_another_port_does_not_receive_the_key() -> None:
    # On main (urllib) the other port received "Authorization: Bearer <key>".
    elsewhere = Recorder(json_answer({"total_slots": 4}))

    def redirect(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("location", f"{elsewhere.url}{handler.path}")
        handler.send_header("content-length", "0")
        handler.end_headers()

    origin = Recorder(redirect)
    try:
        capacity = probe_capacity(f"{origin.url}/v1", "sk-lens-secret-0123456789")
    finally:
        origin.close()
        elsewhere.close()
    assert origin.seen[0]["authorization"] == "Bearer sk-lens-secret-0123456789"  # its own origin is asked with the key
    assert elsewhere.seen and all("authorization" not in headers for headers in elsewhere.seen)
    assert capacity.slots == 4  # the redirect is followed, without the key


def test_a_drip_fed_props_is_cut_off_at_the_probe_deadline() -> None:
    # On main a /props sending one byte a second held the run for as long as it kept sending (urllib's timeout is per read).
    stop = threading.Event()

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("content-length", "100000")
        handler.end_headers()
        ends = time.monotonic() + 15  # then it stops, so that a probe without a deadline fails this test, not hangs it
        while not stop.wait(0.5) and time.monotonic() < ends:
            try:
                handler.wfile.write(b" ")
                handler.wfile.flush()
            except OSError:
                return

    server = Recorder(drip)
    started = time.monotonic()
    try:
        capacity = probe_capacity(f"{server.url}/v1")
    finally:
        stop.set()
        server.close()
    assert capacity.slots is None and "capacity unknown" in capacity.describe()
    assert time.monotonic() - started < PROBE_TIMEOUT_S + 3


def test_a_server_announcing_ten_to_the_thirty_slots_is_taken_at_the_bound(tmp_path: Path) -> None:
    # On main each -n 2 worker grew to 3.5 GB: a lock file path per announced slot.
    server = Recorder(json_answer({"total_slots": 10**30, "default_generation_settings": {"n_ctx": 4096}}))
    try:
        ep = LLMEndpoint(f"{server.url}/v1", api_key_env="LENS_TEST_UNSET_KEY")
        ep.share_slots(tmp_path)
        ep.connect()
    finally:
        server.close()
    assert ep.capacity is not None and ep.capacity.slots == MAX_SLOTS
    assert f"said about 10^30 slots, taken as {MAX_SLOTS:,}" in ep.capacity.describe()
    assert ep.limiter.shared is not None and ep.limiter.shared.count == MAX_SLOTS
