"""The HTTP server: chat completions (with tool calls and usage), embeddings, request recording, faults."""

from __future__ import annotations

import hashlib
import json
import math
import socket
import sys
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from lens_fixtures.openai_server.faults import Fault
from lens_fixtures.openai_server.policies import ChatRequest, LensPolicy, Policy, Reply, classify
from pytest_lens.text import words

__all__ = ["CONTEXT_ERROR_STYLES", "OpenAITestServer", "RecordedRequest", "hashed_embedding"]

#: Fixed so that responses (and artifacts built from them) are byte-identical across runs.
CREATED = 1_700_000_000
#: How servers say a prompt is longer than the model's context (see :meth:`OpenAITestServer.context_error`).
ContextErrorStyle = Literal["openai", "llama-cpp-python", "llama.cpp"]
CONTEXT_ERROR_STYLES: tuple[ContextErrorStyle, ...] = ("openai", "llama-cpp-python", "llama.cpp")
#: What a rambling model says, over and over (4 bytes a word, so one word is one token at 4 bytes per token).
_RAMBLE = "well and then we see the data here but also "
#: A reverse proxy's error page, answered with status 200 (what ``not_json`` faults send by default).
_PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>"


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
    #: Seconds from receiving the request to answering it (generation time included); 0 for refusals.
    elapsed_s: float = 0.0
    #: Seconds of ``elapsed_s`` spent waiting for a free slot (servers with ``slots``), before generating started.
    queued_s: float = 0.0
    #: The query string of the request's URL, as sent (``""`` without one).
    query: str = ""


def hashed_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic unit vector: signed feature hashing of the text's words (similar texts, similar vectors)."""
    vector = [0.0] * dimensions
    for word in words(text):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [round(v / norm, 6) for v in vector] if norm else vector


class OpenAITestServer:
    """An OpenAI-compatible server on 127.0.0.1 (a thread in this process); see the package docstring.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Besides faults, it can
    behave like particular real servers:

    - ``tools_need_choice``: llama.cpp's server (llama-cpp-python, chat format
      ``chatml-function-calling``) leaves the tools out of the prompt when a request has no
      ``tool_choice``, so the model answers as if it had none;
    - ``strict_messages``: llama-cpp-python validates messages more strictly than the protocol: an
      assistant message with ``"content": null`` (allowed beside tool calls) is refused with HTTP 500;
    - ``context_tokens``: the model's context window; a prompt whose tokens plus ``max_tokens`` do not
      fit is refused with HTTP 400 in ``context_error`` style (OpenAI's, llama-cpp-python's or
      llama.cpp's message). Tokens are counted as ``bytes_per_token`` UTF-8 bytes each (real
      tokenizers count more than bytes / 4: about 2.7 bytes per token on LENS's reports);
    - ``seconds_per_token``: how long generating one completion token takes (what makes a rambling
      model slow);
    - ``echo_authorization``: error bodies quote the request's ``Authorization`` header, API key
      included, as some proxies and gateways do;
    - ``slots``: llama.cpp's ``llama-server -np N``: at most ``slots`` chat completions are generated
      at once, the rest wait in arrival order; ``GET /props`` says ``total_slots`` and ``GET /slots``
      which are processing. Like llama-cpp-python's server, a request whose client gave up is still
      generated to its end (its slot stays busy): :meth:`duplicates` counts the requests sent again
      meanwhile and :meth:`busy_fraction` how much of a span at least one slot was generating.
      ``advertise_slots=False`` keeps the slots and answers 404 at ``/props`` and ``/slots``, as
      llama-cpp-python's server and Ollama do: the client cannot know how many it serves.
    - ``seconds_per_prompt_token`` (with ``slots``): how long reading one prompt token takes. Like llama.cpp,
      each slot keeps the last prompt it read with the reply it generated, and reads only what follows their
      common prefix: the next turn of the same conversation costs its new messages, another conversation's
      turn its whole prompt (and evicts the cached one). A request goes to the free slot whose cached prompt
      shares the longest prefix with it. :attr:`prompt_tokens_read` counts the tokens read.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        faults: Sequence[Fault] = (),
        latency_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        tools_need_choice: bool = False,
        strict_messages: bool = False,
        context_tokens: int | None = None,
        bytes_per_token: float = 4.0,
        context_error: ContextErrorStyle = "openai",
        seconds_per_token: float = 0.0,
        echo_authorization: bool = False,
        slots: int | None = None,
        advertise_slots: bool = True,
        seconds_per_prompt_token: float = 0.0,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the test server only listens on the loopback interface, not {host!r}")
        if context_error not in CONTEXT_ERROR_STYLES:
            raise ValueError(f"context_error must be one of {', '.join(CONTEXT_ERROR_STYLES)}, got {context_error!r}")
        if bytes_per_token <= 0:
            raise ValueError(f"bytes_per_token must be positive, got {bytes_per_token}")
        if slots is not None and slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.policy: Policy = policy or LensPolicy()
        self.faults = list(faults)
        self.latency_s = latency_s
        self.tools_need_choice = tools_need_choice
        self.strict_messages = strict_messages
        self.context_tokens = context_tokens
        self.bytes_per_token = bytes_per_token
        self.context_error_style: ContextErrorStyle = context_error
        self.seconds_per_token = seconds_per_token
        self.echo_authorization = echo_authorization
        self.slots = slots
        self.advertise_slots = advertise_slots
        #: Per slot: whether it is generating now (``slots`` servers); slot ``i`` is taken by the oldest waiting request.
        self._slot_busy = [False] * (slots or 0)
        self.seconds_per_prompt_token = seconds_per_prompt_token
        #: Per slot: the prompt it read last with the reply it generated (its cache), as rendered text.
        self._slot_cache = [""] * (slots or 0)
        #: Prompt tokens the slots read (not found in their cache), all requests together.
        self.prompt_tokens_read = 0
        self._slot_turn = threading.Condition()
        self._slot_queue: list[int] = []
        self._tickets = 0
        #: (start, end) of every completion generated in a slot, perf_counter seconds.
        self._served: list[tuple[float, float]] = []
        #: Chat completions received and not answered yet (generating or waiting for a slot), and the most ever.
        self._in_flight = 0
        self._peak_in_flight = 0
        #: Paths of the ``GET /props`` and ``GET /slots`` requests received (not in :attr:`requests`: they ask nothing of the model).
        self.probes: list[str] = []
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
        classify(ChatRequest({}))  # imports what telling requests apart needs now, not during the first (timed) request
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _QuietServer(self._address, Handler)
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
            self._served.clear()
            self.probes.clear()
            self._peak_in_flight = self._in_flight
            self.prompt_tokens_read = 0
        with self._slot_turn:
            self._slot_cache = [""] * len(self._slot_cache)  # a run after this one starts with cold slots

    def duplicates(self) -> int:
        """Chat requests whose body is the same as an earlier chat request's: work the server was asked for twice."""
        seen: set[str] = set()
        repeated = 0
        for request in self.requests:
            if request.path != "/v1/chat/completions" or not isinstance(request.body, dict):
                continue
            key = json.dumps(request.body, sort_keys=True)
            repeated += key in seen
            seen.add(key)
        return repeated

    def served_spans(self) -> list[tuple[float, float]]:
        """When each chat completion held a slot (``time.perf_counter()`` seconds), in the order they ended (``slots`` servers)."""
        with self._lock:
            return list(self._served)

    def busy_fraction(self, start: float, end: float) -> float:
        """Share of ``start``..``end`` (``time.perf_counter()`` seconds) in which at least one slot was generating."""
        if end <= start:
            return 0.0
        with self._lock:
            spans = sorted((max(a, start), min(b, end)) for a, b in self._served if b > start and a < end)
        busy, reach = 0.0, start
        for a, b in spans:
            if b > reach:
                busy += b - max(a, reach)
                reach = b
        return busy / (end - start)

    @property
    def peak_in_flight(self) -> int:
        """The most chat completions ever received and not yet answered at once (generating, or queued for a slot)."""
        with self._lock:
            return self._peak_in_flight

    def _arrive(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def slot_states(self) -> list[bool]:
        """Per slot, whether it is generating now (empty without ``slots``)."""
        with self._slot_turn:
            return list(self._slot_busy)

    def _take_slot(self, prompt: str = "") -> int:
        """Wait, in arrival order, for a free slot and take it: the one whose cached prompt shares most with ``prompt``."""
        with self._slot_turn:
            ticket = self._tickets
            self._tickets += 1
            self._slot_queue.append(ticket)
            while self._slot_queue[0] != ticket or all(self._slot_busy):
                self._slot_turn.wait()
            self._slot_queue.pop(0)
            free = [i for i, busy in enumerate(self._slot_busy) if not busy]
            index = max(free, key=lambda i: (_shared_prefix(self._slot_cache[i], prompt), -i))
            self._slot_busy[index] = True
            self._slot_turn.notify_all()
            return index

    def _read_prompt(self, index: int, prompt: str) -> None:
        """Slot ``index`` reads ``prompt``: the time for the tokens after its cached prefix (``seconds_per_prompt_token``)."""
        with self._slot_turn:
            cached = _shared_prefix(self._slot_cache[index], prompt)
        fresh = self.tokens(prompt[cached:]) if len(prompt) > cached else 0
        with self._lock:
            self.prompt_tokens_read += fresh
        time.sleep(fresh * self.seconds_per_prompt_token)

    def _cache_prompt(self, index: int, prompt: str, payload: dict[str, Any]) -> None:
        """Slot ``index`` keeps ``prompt`` and the reply it generated (the next turn of the conversation starts with both)."""
        choices = payload.get("choices") or [{}]
        reply = (choices[0] or {}).get("message") or {}
        with self._slot_turn:
            self._slot_cache[index] = prompt[: len(prompt) - 1] + ", " + json.dumps(reply, ensure_ascii=False, sort_keys=True)

    @staticmethod
    def rendered_prompt(body: dict[str, Any]) -> str:
        """A request's prompt as one text (tools first, then the messages in order): what a slot caches."""
        tools = json.dumps(body.get("tools") or [], ensure_ascii=False, sort_keys=True)
        messages = [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in body.get("messages") or []]
        return tools + "[" + ", ".join(messages) + "]"

    def _free_slot(self, index: int, started: float) -> None:
        with self._slot_turn:
            self._slot_busy[index] = False
            self._slot_turn.notify_all()
        with self._lock:
            self._served.append((started, time.perf_counter()))

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
    def tokens(self, text: str) -> int:
        """Tokens of ``text`` as this server counts them (``bytes_per_token`` UTF-8 bytes each, at least 1)."""
        return max(1, int(len(text.encode("utf-8")) / self.bytes_per_token))

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """Tokens of a request's prompt as a chat template renders it.

        Each message's text and tool calls, a few tokens of role markers per message, and the tools offered (as JSON).
        """
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        parts = []
        for message in messages:
            content = message.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content or "", ensure_ascii=False))
            if message.get("tool_calls"):
                parts.append(json.dumps(message["tool_calls"], ensure_ascii=False))
        if body.get("tools"):
            parts.append(json.dumps(body["tools"], ensure_ascii=False))
        return self.tokens("\n".join(parts)) + 4 * len(messages)

    def context_error(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The HTTP 400 body refusing ``body`` as too long for ``context_tokens``; ``None`` when it fits."""
        limit = self.context_tokens
        if limit is None:
            return None
        prompt = self.prompt_tokens(body)
        requested = body.get("max_tokens")
        completion = requested if isinstance(requested, int) else 0
        if prompt + completion <= limit:
            return None
        if self.context_error_style == "llama.cpp":  # llama.cpp's own server (tools/server)
            message = f"request ({prompt} tokens) exceeds the available context size ({limit} tokens), try increasing it"
            error = {"code": 400, "message": message, "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": limit}
            return {"error": error}
        if self.context_error_style == "llama-cpp-python":
            message = (
                f"This model's maximum context length is {limit} tokens. However, you requested {prompt + completion} tokens "
                f"({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion."
            )
        else:
            message = (
                f"This model's maximum context length is {limit} tokens. However, your messages resulted in {prompt} tokens. "
                "Please reduce the length of the messages."
            )
        return {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}

    def invalid_message(self, body: dict[str, Any]) -> str | None:
        """With ``strict_messages``, llama-cpp-python's validation error for an assistant message without text content."""
        if not self.strict_messages:
            return None
        for index, message in enumerate(body.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "assistant" and not isinstance(message.get("content"), str):
                return (
                    f"1 validation error: {{'type': 'string_type', 'loc': ('body', 'messages', {index}, "
                    f"'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string'}}"
                )
        return None

    def ramble_tokens(self, body: dict[str, Any]) -> int:
        """How long a model that never stops answers ``body``: ``max_tokens``, else what is left of its context."""
        requested = body.get("max_tokens")
        if isinstance(requested, int) and requested > 0:
            return requested
        return max(1, (self.context_tokens or 8192) - self.prompt_tokens(body))

    def chat_completion(self, body: dict[str, Any], raw: bytes, fault: Fault | None) -> dict[str, Any]:
        """The completion the policy gives for ``body`` (faults that alter the reply applied)."""
        seen = body
        if self.tools_need_choice and body.get("tool_choice") is None:
            seen = {key: value for key, value in body.items() if key != "tools"}  # llama.cpp: no tool_choice, no tools
        request = ChatRequest(seen)
        reply = self.policy(request)
        finish = None
        if fault is not None and fault.kind == "content":
            reply = Reply(content=fault.text)
        elif fault is not None and fault.kind == "ramble":
            count = self.ramble_tokens(body)
            size = max(1, int(count * self.bytes_per_token))
            reply = Reply(content=(_RAMBLE * (size // len(_RAMBLE) + 1))[:size])
            finish = "length"
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
        prompt_tokens = self.prompt_tokens(seen)
        completion_tokens = self.tokens((reply.content or "") + arguments_text)
        if self.seconds_per_token:
            time.sleep(completion_tokens * self.seconds_per_token)
        return {
            "id": f"chatcmpl-{salt[:16]}",
            "object": "chat.completion",
            "created": CREATED,
            "model": str(body.get("model", "scripted")),
            "choices": [{"index": 0, "message": message, "finish_reason": finish or ("tool_calls" if calls else "stop")}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def props(self) -> dict[str, Any]:
        """``GET /props`` as llama.cpp's server answers it (the fields pytest-lens reads, and a few beside them)."""
        n_ctx = self.context_tokens or 8192
        return {
            "total_slots": self.slots,
            "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
            "model_path": "scripted.gguf",
            "build_info": "lens-test-server",
        }

    def slots_view(self) -> list[dict[str, Any]]:
        """``GET /slots`` as llama.cpp's server answers it: one entry per slot, ``is_processing`` while it generates."""
        n_ctx = self.context_tokens or 8192
        return [{"id": index, "n_ctx": n_ctx, "is_processing": busy} for index, busy in enumerate(self.slot_states())]

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """Hashed bag-of-words vectors for ``input`` (a string or a list of them)."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(item) for item in inputs] if isinstance(inputs, list) else []
        requested = body.get("dimensions")
        dimensions = requested if isinstance(requested, int) and requested > 0 else 64
        data = [{"object": "embedding", "index": i, "embedding": hashed_embedding(text, dimensions)} for i, text in enumerate(texts)]
        tokens = sum(self.tokens(text) for text in texts)
        return {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "hashed")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _QuietServer(ThreadingHTTPServer):
    """Says nothing when a client drops its connection (a client refusing a body too large to read resets it)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


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
        elif path in ("/props", "/slots"):  # what a client asks of the server about itself: kept apart from the API's requests
            with self.owner._lock:
                self.owner.probes.append(path)
            if self.owner.slots is None or not self.owner.advertise_slots:
                self._send(404, {"error": {"message": f"no route GET {path}", "type": "lens_test_server", "code": 404}})
            else:
                self._send(200, self.owner.props() if path == "/props" else self.owner.slots_view())
        else:
            self._error(404, f"no route GET {path}", "GET", path, "other", None)

    def do_POST(self) -> None:
        started = time.perf_counter()
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
        invalid = owner.invalid_message(body) if kind != "embedding" else None
        if invalid is not None:
            self._error(500, invalid, "POST", path, kind, body, fault="validation")
            return
        refusal = owner.context_error(body) if kind != "embedding" else None
        if refusal is not None:
            owner._record(RecordedRequest("POST", path, kind, 400, body, "context", self.headers.get("authorization")))
            self._send(400, refusal)
            return
        chat = kind != "embedding"
        if chat:
            owner._arrive()  # counted until its answer is ready, before it is sent (the client may send the next at once)
        caching = owner.slots is not None and chat and owner.seconds_per_prompt_token > 0
        prompt = owner.rendered_prompt(body) if caching else ""
        slot = owner._take_slot(prompt) if owner.slots is not None and chat else None
        generating = time.perf_counter()
        try:
            if caching and slot is not None:
                owner._read_prompt(slot, prompt)
            if fault is not None and fault.kind == "slow":  # slow generation: it holds the slot while it lasts
                time.sleep(fault.delay_s)
            payload = owner.chat_completion(body, raw, fault) if kind != "embedding" else owner.embeddings(body)
            if caching and slot is not None:
                owner._cache_prompt(slot, prompt, payload)
        except Exception as exc:  # a policy bug: report it to the client like a server would
            self._error(500, f"policy error: {type(exc).__name__}: {exc}", "POST", path, kind, body, fault="policy")
            return
        finally:
            if slot is not None:
                owner._free_slot(slot, generating)
            if chat:
                owner._leave()
        fault_kind = fault.kind if fault is not None else None
        elapsed = time.perf_counter() - started
        queued = generating - started if slot is not None else 0.0
        authorization = self.headers.get("authorization")
        owner._record(RecordedRequest("POST", path, kind, 200, body, fault_kind, authorization, elapsed, queued, self._query()))
        if fault is not None and fault.kind == "gzip_bomb":
            data = _gzip_bomb(json.dumps(payload).encode("utf-8"), fault.inflated_bytes)
            self._send_bytes(200, data, "application/json", {"content-encoding": "gzip"})
        elif fault is not None and fault.kind == "not_json":
            self._send_bytes(200, (fault.text or _PROXY_PAGE).encode("utf-8"), "text/html; charset=utf-8")
        elif fault is not None and fault.kind == "truncated":
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self._send_bytes(200, data[: len(data) // 2], "application/json")
        else:
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
        authorization = self.headers.get("authorization")
        self.owner._record(RecordedRequest(method, path, kind, status, body, fault, authorization, query=self._query()))
        if self.owner.echo_authorization:
            message += f" (request headers: Authorization: {authorization})"
        self._send(status, {"error": {"message": message, "type": "lens_test_server", "code": status}}, headers)

    def _query(self) -> str:
        return self.path.partition("?")[2]

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired during a slow fault)


_PADDING_STATES: dict[int, tuple[Any, bytes]] = {}
_PADDING_LOCK = threading.Lock()


def _gzip_bomb(payload: bytes, inflated_bytes: int) -> bytes:
    """Gzip of ``payload`` after white space, ``inflated_bytes`` in all (the padding's compressor is kept per size)."""
    with _PADDING_LOCK:
        if inflated_bytes not in _PADDING_STATES:
            compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
            pieces: list[bytes] = []
            left, block = max(0, inflated_bytes - len(payload)), b" " * 2**20
            while left > 0:
                pieces.append(compressor.compress(block[:left]))
                left -= len(block)
            _PADDING_STATES[inflated_bytes] = (compressor, b"".join(pieces))
        compressor, head = _PADDING_STATES[inflated_bytes]
        rest = compressor.copy()
    return bytes(head + rest.compress(payload) + rest.flush())


def _shared_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` have in common from their start (a binary search over prefix comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
