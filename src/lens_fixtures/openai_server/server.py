"""The HTTP server: chat completions (with tool calls and usage), embeddings, request recording, faults."""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from lens_fixtures.openai_server.faults import Fault
from lens_fixtures.openai_server.policies import ChatRequest, LensPolicy, Policy, Reply, classify
from pytest_lens.text import words

__all__ = ["OpenAITestServer", "RecordedRequest", "hashed_embedding"]

#: Fixed so that responses (and artifacts built from them) are byte-identical across runs.
CREATED = 1_700_000_000


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received and how it answered."""

    method: str
    path: str
    kind: str
    status: int
    body: Any
    fault: str | None = None
    #: The ``Authorization`` header as sent (lets tests check a key reached the server and nowhere else).
    authorization: str | None = None


def hashed_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic unit vector: signed feature hashing of the text's words (similar texts, similar vectors)."""
    vector = [0.0] * dimensions
    for word in words(text):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [round(v / norm, 6) for v in vector] if norm else vector


def _tokens(text: str) -> int:
    return max(1, len(text.encode("utf-8")) // 4)


class OpenAITestServer:
    """An OpenAI-compatible server on 127.0.0.1 (a thread in this process); see the package docstring.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        faults: Sequence[Fault] = (),
        latency_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the test server only listens on the loopback interface, not {host!r}")
        self.policy: Policy = policy or LensPolicy()
        self.faults = list(faults)
        self.latency_s = latency_s
        self._address = (host, port)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._attempts: dict[tuple[int, str], int] = {}
        self._fired: dict[int, int] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> OpenAITestServer:
        """Listen and serve on a background thread."""
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(self._address, Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="lens-openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``--lens-llm-base-url`` or ``openai.OpenAI(base_url=...)``."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- what happened ---------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def count(self, *, path: str | None = None, kind: str | None = None, status: int | None = None) -> int:
        """Requests received, optionally only those with this path, kind (agent, judge, ...) or status."""
        return sum(
            1
            for r in self.requests
            if (path is None or r.path == path) and (kind is None or r.kind == kind) and (status is None or r.status == status)
        )

    def reset(self) -> None:
        """Forget recorded requests and attempt counts (transient faults fire again)."""
        with self._lock:
            self._requests.clear()
            self._attempts.clear()
            self._fired.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _fault_for(self, body: bytes, kind: str) -> Fault | None:
        """The first fault that selects this request and fires on this attempt."""
        digest = hashlib.sha256(body).hexdigest()
        chosen = None
        with self._lock:
            for index, fault in enumerate(self.faults):
                if not fault.selects(body, kind):
                    continue
                seen = self._attempts.get((index, digest), 0)
                self._attempts[(index, digest)] = seen + 1
                exhausted = fault.limit is not None and self._fired.get(index, 0) >= fault.limit
                if chosen is None and not exhausted and fault.fires(seen):
                    chosen = fault
                    self._fired[index] = self._fired.get(index, 0) + 1
        return chosen

    # -- answering -----------------------------------------------------------------------------
    def chat_completion(self, body: dict[str, Any], raw: bytes, fault: Fault | None) -> dict[str, Any]:
        """The completion the policy gives for ``body`` (faults that alter the reply applied)."""
        request = ChatRequest(body)
        reply = self.policy(request)
        if fault is not None and fault.kind == "content":
            reply = Reply(content=fault.text)
        salt = hashlib.sha256(raw).hexdigest()
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        calls: list[dict[str, Any]] = []
        arguments_text = ""
        for index, (name, arguments) in enumerate(reply.tool_calls):
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            if fault is not None and fault.kind == "malformed_tool_arguments":
                text = text[: max(1, len(text) // 2)]  # cut mid-object: no longer valid JSON
            arguments_text += text
            calls.append({"id": f"call_{salt[:12]}_{index}", "type": "function", "function": {"name": name, "arguments": text}})
        if calls:
            message["tool_calls"] = calls
        prompt_tokens = _tokens(json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("tools") or []))
        completion_tokens = _tokens((reply.content or "") + arguments_text)
        return {
            "id": f"chatcmpl-{salt[:16]}",
            "object": "chat.completion",
            "created": CREATED,
            "model": str(body.get("model", "scripted")),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """Hashed bag-of-words vectors for ``input`` (a string or a list of them)."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(item) for item in inputs] if isinstance(inputs, list) else []
        requested = body.get("dimensions")
        dimensions = requested if isinstance(requested, int) and requested > 0 else 64
        data = [{"object": "embedding", "index": i, "embedding": hashed_embedding(text, dimensions)} for i, text in enumerate(texts)]
        tokens = sum(_tokens(text) for text in texts)
        return {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "hashed")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAITestServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without this, Nagle + delayed ACK add ~40 ms per request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read :attr:`OpenAITestServer.requests` instead."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model", "created": CREATED, "owned_by": "lens"}]})
            self.owner._record(RecordedRequest("GET", path, "models", 200, None, authorization=self.headers.get("authorization")))
        else:
            self._error(404, f"no route GET {path}", "GET", path, "other", None)

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            self._error(400, f"invalid JSON body: {exc}", "POST", path, "invalid", None)
            return
        if path == "/v1/chat/completions":
            kind = classify(ChatRequest(body))
        elif path == "/v1/embeddings":
            kind = "embedding"
        else:
            self._error(404, f"no route POST {path}", "POST", path, "other", body)
            return
        owner = self.owner
        if owner.latency_s:
            time.sleep(owner.latency_s)
        fault = owner._fault_for(raw, kind)
        if fault is not None and fault.kind == "status":
            headers = {"retry-after-ms": str(fault.retry_after_ms)} if fault.status == 429 or fault.status >= 500 else {}
            message = fault.text or f"injected fault: HTTP {fault.status}"
            self._error(fault.status, message, "POST", path, kind, body, headers=headers, fault="status")
            return
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.delay_s)
        try:
            payload = owner.chat_completion(body, raw, fault) if kind != "embedding" else owner.embeddings(body)
        except Exception as exc:  # a policy bug: report it to the client like a server would
            self._error(500, f"policy error: {type(exc).__name__}: {exc}", "POST", path, kind, body, fault="policy")
            return
        owner._record(
            RecordedRequest("POST", path, kind, 200, body, fault.kind if fault is not None else None, self.headers.get("authorization"))
        )
        self._send(200, payload)

    def _error(
        self,
        status: int,
        message: str,
        method: str,
        path: str,
        kind: str,
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        fault: str | None = None,
    ) -> None:
        self.owner._record(RecordedRequest(method, path, kind, status, body, fault, self.headers.get("authorization")))
        self._send(status, {"error": {"message": message, "type": "lens_test_server", "code": status}}, headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired during a slow fault)
