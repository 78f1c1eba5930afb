"""Issue 32: a response body is capped while it is decoded, so a gzip bomb cannot fill the memory.

Each client pytest-lens runs (the chat client behind agents, judges and LLM-backed adapters; the embedding client
behind the embedding-backed adapters) talks to the project's OpenAI-compatible server on 127.0.0.1, which answers
with a gzip body inflating far past the cap. Peak memory is measured in a fresh process.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.llm.bounded import MAX_RESPONSE_BYTES
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint, LLMRequestError
from pytest_lens.llm.stats import LLMStats

HELLO = [{"role": "user", "content": "hello"}]
SRC = Path(__file__).parents[3] / "src"


def chat_client(base_url: str, tmp_path: Path) -> ChatClient:
    endpoint = LLMEndpoint(base_url, api_key_env="LENS_TEST_KEY", timeout_s=30.0, retries=3, backoff_base_s=0.001)
    return ChatClient(endpoint, "scripted", cache=RequestCache(tmp_path / "cache.sqlite", "record"), stats=LLMStats())


def test_a_gzip_bomb_is_a_clear_error_naming_the_cap_and_the_endpoint_not_retried(tmp_path: Path) -> None:
    bomb = Fault("gzip_bomb", permanent=True, inflated_bytes=4 * MAX_RESPONSE_BYTES)
    with OpenAITestServer(faults=[bomb]) as server:
        base = server.base_url
        client = chat_client(f"{base}?api_key=qk-bounded-5ec7e7", tmp_path)
        with pytest.raises(LLMRequestError) as raised:
            client.complete(HELLO, purpose="agent")
        assert server.count() == 1  # the same request would bring the same body: no retry
    message = str(raised.value)
    assert "is larger than 16 MiB" in message and "MAX_RESPONSE_BYTES in pytest_lens.llm.bounded" in message
    assert f"POST {base}/chat/completions?api_key=***" in message and "qk-bounded" not in message
    assert "decoded from gzip" in message
    assert client.stats.snapshot().bad_responses == 1 and client.stats.snapshot().failures == 1


def test_a_compressed_body_under_the_cap_is_decoded_as_before(tmp_path: Path) -> None:
    small = Fault("gzip_bomb", permanent=True, inflated_bytes=2**20)  # 1 MiB of white space, then the completion
    with OpenAITestServer(faults=[small]) as server:
        reply = chat_client(server.base_url, tmp_path).complete(HELLO)
    assert reply.content == "OK"


def test_the_embedding_client_caps_its_responses_too() -> None:
    from pytest_lens.embedding.endpoint import OpenAIEmbedder

    bomb = Fault("gzip_bomb", permanent=True, only="embedding", inflated_bytes=64 * MAX_RESPONSE_BYTES)
    with OpenAITestServer(faults=[bomb]) as server:
        embedder = OpenAIEmbedder("embed", f"{server.base_url}?api-version=2024-02-01", batch_size=8)
        with pytest.raises(RuntimeError, match=r"larger than 16 MiB .*EMBEDDING_BYTES_PER_TEXT per text of batch_size"):
            embedder.encode(["a", "b"])
        assert server.requests[-1].query == "api-version=2024-02-01"
    assert OpenAIEmbedder("embed", "http://127.0.0.1:1/v1", batch_size=1024).max_response_bytes == 128 * 2**20  # big batches: more


PEAK = """
import sys
from pathlib import Path
from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint, LLMError
from pytest_lens.llm.stats import LLMStats

def peak_kb():  # VmHWM: this process's peak resident size since its exec (ru_maxrss carries over its parent's)
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))

bomb = Fault("gzip_bomb", permanent=True, inflated_bytes=int(sys.argv[1]))
with OpenAITestServer(faults=[bomb]) as server:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", timeout_s=60.0, retries=0)
    client = ChatClient(endpoint, "m", cache=RequestCache(Path(sys.argv[2]), "off"), stats=LLMStats())
    before = peak_kb()
    try:
        outcome = client.complete([{"role": "user", "content": "hi"}]).content
    except LLMError as exc:
        outcome = type(exc).__name__
    print(outcome, (peak_kb() - before) // 1024)
"""


def test_memory_stays_bounded_while_a_quarter_gib_bomb_is_refused(tmp_path: Path) -> None:
    """Before the cap, this 0.25 MB body inflating to 256 MiB raised the peak by 799 MB and was answered (now: 47 MB)."""
    script = textwrap.dedent(PEAK)
    done = subprocess.run(
        [sys.executable, "-c", script, str(2**28), str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        timeout=240,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    outcome, grown_mb = done.stdout.split()
    assert outcome == "LLMRequestError"
    # The cap (16 MiB) held once or twice, the decoder's 64 KiB steps and importing openai (the first request does).
    assert int(grown_mb) < 128, done.stdout


def chunked(library: object, data: bytes) -> object:
    """``data`` as a streamed body in 16 kB pieces (a plain bytes body would be read before the transport sees it)."""

    class Chunks(library.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> object:
            return iter([data[start : start + 16384] for start in range(0, len(data), 16384)])

    return Chunks()


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, sent under that name by some servers
        ("gzip, deflate", lambda data: zlib.compress(gzip.compress(data))),
        ("identity", lambda data: data),
    ],
)
def test_every_encoding_asked_for_is_decoded_in_steps(encoding: str, encode: object) -> None:
    import openai

    from pytest_lens.llm.bounded import bounded_transport, http_library

    library = http_library(openai)
    body = json.dumps({"text": "x" * 300_000}).encode()

    def answer(request: object) -> object:
        assert request.headers["accept-encoding"] == "gzip, deflate"  # type: ignore[attr-defined]
        return library.Response(200, headers={"content-encoding": encoding}, stream=chunked(library, encode(body)))  # type: ignore[operator]

    transport = bounded_transport(library, library.MockTransport(answer), 1_000_000, "a test cap")
    with library.Client(transport=transport) as client:
        assert client.get("http://127.0.0.1/x").content == body
    small = bounded_transport(library, library.MockTransport(answer), 100_000, "a test cap")
    with library.Client(transport=small) as client, pytest.raises(Exception, match=r"larger than 97.6562 KiB .*\(a test cap\)"):
        client.get("http://127.0.0.1/x")


def test_an_encoding_not_asked_for_or_a_corrupt_body_is_refused() -> None:
    import openai

    from pytest_lens.llm.bounded import ResponseBodyError, bounded_transport, http_library

    library = http_library(openai)
    brotli = bounded_transport(library, library.MockTransport(lambda _: library.Response(200, headers={"content-encoding": "br"})), 10, "c")
    refused = pytest.raises(ResponseBodyError, match="encoded as 'br', which pytest-lens did not ask for")
    with library.Client(transport=brotli) as client, refused:
        client.get("http://127.0.0.1/x")
    garbage = chunked(library, b"not gzip at all")
    corrupt = library.MockTransport(lambda _: library.Response(200, headers={"content-encoding": "gzip"}, stream=garbage))
    with library.Client(transport=bounded_transport(library, corrupt, 100, "c")) as client, pytest.raises(library.DecodingError):
        client.get("http://127.0.0.1/x")


def test_the_capacity_probe_reads_no_more_than_a_response_may_hold() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pytest_lens.llm.capacity import probe_capacity

    padding = b" " * (MAX_RESPONSE_BYTES + 1)
    props = json.dumps({"total_slots": 2, "default_generation_settings": {"n_ctx": 4096}}).encode()

    class Props(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = padding + props if self.server.huge else props  # type: ignore[attr-defined]
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None: ...

    server = ThreadingHTTPServer(("127.0.0.1", 0), Props)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        server.huge = False  # type: ignore[attr-defined]
        assert probe_capacity(base).slots == 2  # the same body, under the cap, is read
        server.huge = True  # type: ignore[attr-defined]
        assert probe_capacity(base).slots is None  # past the cap: not read whole, an unknown capacity
    finally:
        server.shutdown()
        server.server_close()
