from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from pytest_lens.embedding import OpenAIEmbedder, build_embedder


@dataclass
class EmbeddingServer:
    """A small OpenAI-compatible /v1/embeddings server on 127.0.0.1 (vectors: [len(text), count of 'a', 1])."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    mode: str = "ok"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append({key.lower(): value for key, value in self.headers.items()})
            if self.path != "/v1/embeddings" or state.mode == "error":
                self._send(500, {"error": {"message": "boom", "type": "server_error"}})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            if state.mode == "short":
                inputs = inputs[:-1]
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(text)), float(text.count("a")), 1.0]}
                for i, text in enumerate(inputs)
            ]
            data.reverse()  # the client must order by index
            self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def test_batches_requests_orders_by_index_and_normalises(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_EMBEDDING_API_KEY", "sk-test-123")
    embedder = OpenAIEmbedder("tiny-embed", server.url, batch_size=2)
    vectors = embedder.encode(["aa", "b", "aaaa"])
    assert [request["input"] for request in server.requests] == [["aa", "b"], ["aaaa"]]
    assert {request["model"] for request in server.requests} == {"tiny-embed"}
    assert server.headers[0]["authorization"] == "Bearer sk-test-123"
    expected = np.array([[2, 2, 1], [1, 0, 1], [4, 4, 1]], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    assert vectors.dtype == np.float32
    assert embedder.model_id == f"openai:{server.url}:tiny-embed"


def test_a_failing_endpoint_is_named(server: EmbeddingServer) -> None:
    server.mode = "error"
    with pytest.raises(RuntimeError, match=r"embedding endpoint http://127\.0\.0\.1:\d+/v1 \(model 'm'\) failed"):
        OpenAIEmbedder("m", server.url, max_retries=0).encode(["x"])


def test_a_short_response_is_rejected(server: EmbeddingServer) -> None:
    server.mode = "short"
    with pytest.raises(ValueError, match="returned 1 vectors for 2 texts"):
        OpenAIEmbedder("m", server.url).encode(["x", "y"])


def test_adapter_options_select_the_endpoint_and_the_cache_serves_reruns(server: EmbeddingServer) -> None:
    embedder = build_embedder(model="tiny-embed", base_url=server.url)
    embedder.encode(["one", "two"])
    again = build_embedder(model="tiny-embed", base_url=server.url)
    again.encode(["two", "one"])
    assert len(server.requests) == 1  # the second embedder found both in the shared cache
    assert (again.stats.hits, again.stats.misses) == (2, 0)


@pytest.mark.parametrize(
    ("model", "base_url", "message"),
    [("", "http://127.0.0.1:1/v1", "needs a model name"), ("m", "", "needs a base URL")],
)
def test_missing_settings_are_errors(model: str, base_url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder(model, base_url)


def test_a_base_url_needs_a_model_name() -> None:
    with pytest.raises(ValueError, match="embedding_base_url needs embedding_model"):
        build_embedder(base_url="http://127.0.0.1:1/v1")
