"""Chat completions against any OpenAI-compatible endpoint, through the request cache, with retries.

:class:`LLMEndpoint` owns the ``openai`` client of one base URL (created on the first
real request, so replaying a run never imports ``openai``) and retries 429s, 5xx
responses, timeouts and connection errors with exponential backoff (honouring
``Retry-After``). :class:`ChatClient` binds an endpoint to a model, a seed and the
shared :class:`~pytest_lens.llm.cache.RequestCache`; agents, judges, baselines and
adapters all call :meth:`ChatClient.complete`.

The API key is read from the environment variable named in the settings (through
:func:`~pytest_lens.llm.api_keys.read_api_key`), kept on the endpoint only, and masked in every
error message (:func:`~pytest_lens.llm.api_keys.mask_keys`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import partial
from pathlib import Path
from typing import Any

from pytest_lens.llm.api_keys import mask_data, mask_keys, mask_secrets, read_api_key, remember_url
from pytest_lens.llm.bounded import ResponseBodyError
from pytest_lens.llm.cache import RequestCache, request_key
from pytest_lens.llm.capacity import ServerCapacity, http_getter, probe_capacity, server_root
from pytest_lens.llm.errors import LLMContextLengthError, LLMError, LLMRequestError, LLMResponseError, LLMTimeoutError
from pytest_lens.llm.limiter import ConnectionLimiter
from pytest_lens.llm.repetition import current_repetition, repetition_seed
from pytest_lens.llm.settings import DEFAULT_MAX_TOKENS, TIMEOUT_BASE_S, TIMEOUT_S_PER_TOKEN, auto_timeout_s, display_url, split_base_url
from pytest_lens.llm.shared_slots import SharedSlots
from pytest_lens.llm.stats import LLMStats, note_request
from pytest_lens.progress import while_ticking

__all__ = [
    "ChatClient",
    "ChatReply",
    "LLMContextLengthError",
    "LLMEndpoint",
    "LLMError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMTimeoutError",
    "ToolCall",
    "Usage",
]

#: Sent when the key variable is unset: local servers (vLLM, Ollama, llama.cpp) accept any key.
_NO_KEY = "not-set"
_RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the raw JSON text, possibly malformed."""

    id: str
    name: str
    arguments: str

    def openai(self) -> dict[str, Any]:
        """The ``tool_calls`` entry of an assistant message."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Usage:
    """Token counts the endpoint reported for one completion."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a chat completion."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    cached: bool = False

    def assistant_message(self) -> dict[str, Any]:
        """The reply as an ``assistant`` message for the conversation history.

        ``content`` is a string even beside tool calls: the protocol allows ``null`` there, but
        llama-cpp-python's server rejects it (HTTP 500, a validation error) and an empty string is
        accepted everywhere.
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.openai() for call in self.tool_calls]
        return message

    @classmethod
    def from_response(cls, response: Mapping[str, Any], *, cached: bool = False) -> ChatReply:
        """Parse a chat-completion JSON object; :class:`LLMResponseError` says what is missing."""
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise LLMResponseError("the completion has no choices")
        message = choices[0].get("message")
        if not isinstance(message, Mapping):
            raise LLMResponseError("the first choice has no message")
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise LLMResponseError(f"message content is a {type(content).__name__}, not text")
        calls: list[ToolCall] = []
        for index, raw in enumerate(message.get("tool_calls") or []):
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise LLMResponseError(f"tool call {index} has no function name")
            arguments = function.get("arguments")
            if not isinstance(arguments, str):  # some servers send an object; the protocol says a JSON string
                arguments = json.dumps(arguments if arguments is not None else {})
            calls.append(ToolCall(id=str(raw.get("id") or f"call_{index}"), name=function["name"], arguments=arguments))
        usage_raw = response.get("usage")
        usage = None
        if isinstance(usage_raw, Mapping):
            prompt = _int(usage_raw.get("prompt_tokens"))
            completion = _int(usage_raw.get("completion_tokens"))
            usage = Usage(prompt, completion, _int(usage_raw.get("total_tokens")) or prompt + completion)
        finish = choices[0].get("finish_reason")
        return cls(content, tuple(calls), usage, finish if isinstance(finish, str) else None, cached)


def _cap_option(purpose: str) -> str:
    """The option that sets the ``max_tokens`` of a request made for ``purpose``."""
    if purpose in ("agent", "baseline"):
        return "--lens-agent-max-tokens"
    if "judge" in purpose:
        return "--lens-judge-short-max-tokens for A/B/TIE verdicts, --lens-judge-max-tokens for verdicts with a reason"
    return f"the max_tokens {purpose} asks for"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class LLMEndpoint:
    """One OpenAI-compatible endpoint and its retry policy."""

    def __init__(
        self,
        base_url: str | None,
        *,
        api_key_env: str,
        timeout_s: float | None = None,
        retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_connections: int = 16,
        context_tokens: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/") if base_url else None
        #: The model's context window in tokens (``--lens-llm-context``), for components that size their prompts or
        #: tell a system how large its model's context is (Letta's ``context_window``); ``None``: not given.
        self.context_tokens = context_tokens
        remember_url(self.base_url)  # its password and key parameters are masked in every message from now on
        self.api_key_env = api_key_env
        # Its key is masked from now on, in requests as they are keyed too: before, it was known only once the
        # first request connected, so the first request was keyed unmasked and a replay that never connects keyed
        # every request unmasked (a key quoted in a prompt, such as a local server's "none", then missed).
        read_api_key(api_key_env)
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._client: Any = None
        self._response_class: type = object
        #: Set once a completion has been asked for (sent, or found in the cache): from then on the process
        #: mostly waits for the model, and the first request no longer needs the processor to itself.
        self.requested = threading.Event()
        self._api_key: str | None = None
        self._lock = threading.Lock()
        #: Requests in flight at once, adapting to 429/503 answers (``--lens-max-connections``).
        self.limiter = ConnectionLimiter(max_connections)
        #: What the server said it serves at once (probed when connecting); ``None`` before.
        self.capacity: ServerCapacity | None = None
        #: Where the run's processes share the server's slots (:meth:`share_slots`), else ``None``.
        self.shared_slots_dir: Path | None = None

    def __repr__(self) -> str:
        return f"LLMEndpoint({display_url(self.base_url)!r}, api_key_env={self.api_key_env!r})"

    @property
    def cache_identity(self) -> str:
        """The endpoint as it enters cache keys, its secrets masked (the default OpenAI URL when none is given)."""
        return mask_secrets(self.base_url) if self.base_url else "https://api.openai.com/v1"

    def create(self, request: Mapping[str, Any], stats: LLMStats) -> dict[str, Any]:
        """Send one chat-completion request, retrying transient failures; the response as JSON data.

        A 200 response that is not a usable completion (an HTML error page from a proxy, a body
        cut off mid-JSON, no choices) is a transient server fault: retried like a 5xx and counted
        in ``bad_responses``. A prompt longer than the model's context raises
        :class:`LLMContextLengthError` at once (resending it cannot help).
        """
        client, response_class = self.connect()
        import openai

        timeout = self.request_timeout(request)
        attempt = 0
        while True:
            stats.add(http_requests=1)
            try:
                with self.limiter.slot() as waited:
                    self.requested.set()
                    sent = time.perf_counter()
                    try:
                        # The body is already plain JSON: posting it skips the SDK's per-request walk of it against the
                        # typed parameters (about 3 ms of CPU for an agent's 12 kB request, most of what a request costs
                        # here), with the same client, headers and errors. The SDK's README documents this call.
                        # A serial run's thread beats meanwhile (progress lines while it waits on the model).
                        post = partial(client.post, "/chat/completions", body=request, cast_to=response_class, options={"timeout": timeout})
                        raw = while_ticking(post)
                    except BaseException as exc:
                        served = time.perf_counter() - sent
                        # After a timeout the retry must not queue behind the work the server may still do for it.
                        held = self._hold_until_served(timeout) if isinstance(exc, openai.APITimeoutError) else 0.0
                        stats.add(wait_s=waited + held, served_s=served)
                        raise
                    stats.add(wait_s=waited, served_s=time.perf_counter() - sent)
                    response = _completion_json(raw)
                reply = ChatReply.from_response(response)  # no choices, no message: a malformed body
                stats.add(answered=1)
                if attempt:
                    stats.add(recovered=1)
                if reply.usage is not None:
                    stats.add(prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
                return response
            except openai.APIStatusError as exc:
                overflow = context_overflow(exc.status_code, getattr(exc, "body", None), _body_message(exc))
                if overflow is not None:
                    raise LLMContextLengthError(
                        mask_keys(f"LLM request to {display_url(self.base_url)} failed: HTTP {exc.status_code}: {_body_message(exc)}"),
                        limit=overflow[0],
                        prompt_tokens=overflow[1],
                    ) from None
                retryable = exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
                problem = f"HTTP {exc.status_code}: {_body_message(exc)}"
                if exc.status_code in (401, 403):
                    problem += f" (check the API key in ${self.api_key_env})"
                delay = _retry_after(exc.response.headers)
            except openai.APITimeoutError:
                retryable, problem, delay = True, self._timeout_problem(timeout, request), None
            except openai.APIConnectionError as exc:
                retryable, problem, delay = True, f"{type(exc).__name__}: {exc}", None
            except ResponseBodyError as exc:  # too large to read: the same request would bring the same body
                stats.add(bad_responses=1)
                retryable, problem, delay = False, f"unusable response: {exc}", None
            except (openai.APIResponseValidationError, LLMResponseError) as exc:
                stats.add(bad_responses=1)
                retryable, problem, delay = True, f"unusable 200 response: {exc}", None
            if not retryable or attempt >= self.retries:
                tried = f" after {attempt + 1} attempts" if attempt else ""
                message = mask_keys(f"LLM request to {display_url(self.base_url)} failed{tried}: {problem}")
                if problem.startswith("timed out"):
                    raise LLMTimeoutError(message, timeout_s=timeout, max_tokens=_int(request.get("max_tokens")) or None)
                raise LLMRequestError(message)
            stats.add(retries=1)
            if problem.startswith("timed out") and self.timeout_s is None:
                timeout *= 2  # the same request at temperature 0 needs as long again: give the resend the time it takes
            time.sleep(min(self.backoff_max_s, delay if delay is not None else self.backoff_base_s * 2**attempt))
            attempt += 1

    def request_timeout(self, request: Mapping[str, Any]) -> float:
        """Seconds one attempt of ``request`` may take: ``--lens-llm-timeout``, else sized to its prompt and ``max_tokens``."""
        if self.timeout_s is not None:
            return self.timeout_s
        max_tokens = _int(request.get("max_tokens")) or DEFAULT_MAX_TOKENS
        messages = [message for message in request.get("messages") or [] if isinstance(message, Mapping)]
        prompt_chars = sum(len(str(message.get("content") or "")) for message in messages)
        return auto_timeout_s(max_tokens, prompt_chars)

    def _timeout_problem(self, timeout: float, request: Mapping[str, Any]) -> str:
        """What a timeout means and which options change it (the server accepted the request: slow, not down)."""
        max_tokens = _int(request.get("max_tokens")) or None
        how = (
            "--lens-llm-timeout"
            if self.timeout_s is not None
            else f"sized to the request: {TIMEOUT_BASE_S:g} s + {TIMEOUT_S_PER_TOKEN:g} s per token of max_tokens + its prompt; "
            "--lens-llm-timeout=SECONDS sets it"
        )
        cap = f"up to {max_tokens} tokens" if max_tokens else "a completion"
        capacity = self.capacity
        serving = f"; {capacity.describe()}" if capacity is not None else ""
        return (
            f"timed out: no answer within {timeout:g} s ({how}) for {cap}: the server accepted the "
            f"request but did not finish it in time (a slow model, not a down endpoint){serving}"
        )

    def _hold_until_served(self, timeout: float) -> float:
        """After a timeout, while still holding the request's place: wait until the server has a free slot again.

        The server may still be generating the abandoned request (llama-cpp-python's server does not stop it;
        llama.cpp's stops it within a second or so): sending the retry at once would queue it behind that work.
        Returns the seconds waited (counted as queueing). Only servers that say which slots are busy are waited for.
        """
        capacity = self.capacity
        if capacity is None or capacity.slots_url is None:
            return 0.0
        started = time.perf_counter()
        # At most twice the timeout: a server that does not stop abandoned work finishes it within about that.
        capacity.wait_for_idle_slot(2 * timeout, self._api_key if self._api_key != _NO_KEY else None)
        return time.perf_counter() - started

    def share_slots(self, directory: Path | None) -> None:
        """Share the server's slots with the other processes of this run through lock files in ``directory``.

        The run's processes (pytest-xdist workers) each keep no more requests in flight than the server has
        slots; sharing makes that the limit of them all together (:class:`~pytest_lens.llm.shared_slots.SharedSlots`).
        Only a server that says how many slots it has is shared; ``None`` (the default) shares nothing.
        """
        with self._lock:
            self.shared_slots_dir = directory
            if self.capacity is not None:
                self._share()

    def _share(self) -> None:
        capacity = self.capacity
        slots = capacity.slots if capacity is not None else None
        if slots is None or self.base_url is None:
            self.limiter.share(None)
            return
        self.limiter.share(SharedSlots.for_server(self.shared_slots_dir, server_root(self.base_url), slots))

    def connect(self) -> tuple[Any, type]:
        """The ``openai`` client of this endpoint (built on first use) and its transport's HTTP response class.

        Building it imports ``openai`` and its HTTP transport (most of a second): a run about to send requests
        calls this on a background thread (:meth:`pytest_lens.runs.session.LensSession.warm_up`).
        """
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise LLMError("LLM requests need the openai package: pip install 'pytest-lens[llm]'") from None
                self._api_key = read_api_key(self.api_key_env) or _NO_KEY
                from pytest_lens.llm.bounded import http_library
                from pytest_lens.llm.deadline import deadline_http_client

                timeout = self.timeout_s if self.timeout_s is not None else auto_timeout_s(DEFAULT_MAX_TOKENS, 0)
                library = http_library(openai)
                base_url, query = split_base_url(self.base_url) if self.base_url else (None, {})
                # The timeout bounds a whole response: each request's own (sized per request) or this one.
                http = deadline_http_client(openai, library, timeout)
                self._client = openai.OpenAI(
                    base_url=base_url,
                    default_query=query or None,
                    api_key=self._api_key,
                    timeout=timeout,
                    max_retries=0,
                    http_client=http,
                )
                self._response_class = library.Response
                self.limiter.timeout_types = (openai.APITimeoutError,)
                key = self._api_key if self._api_key != _NO_KEY else None
                self.capacity = probe_capacity(base_url, key, get=http_getter(http))  # its redirect, deadline and size rules
                if self.capacity.slots is not None:
                    self.limiter.fit(self.capacity.slots)
                self._share()
            return self._client, self._response_class


def _completion_json(http: Any) -> dict[str, Any]:
    """The body of a 200 response as a JSON object; :class:`LLMResponseError` saying what it is otherwise."""
    content_type = str(http.headers.get("content-type", "")).split(";")[0].strip() or "no content-type"
    text = http.text
    try:
        data = json.loads(text)
    except ValueError:
        shown = " ".join(text.split())[:80]
        what = "a body cut off mid-JSON" if text.lstrip().startswith(("{", "[")) else "a body that is not JSON"
        raise LLMResponseError(f"{what} ({content_type}, {len(text.encode())} bytes: {shown!r})") from None
    if not isinstance(data, dict):
        raise LLMResponseError(f"a JSON {type(data).__name__} instead of a completion object ({content_type})")
    return data


_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long|input is too long", re.IGNORECASE
)
_CONTEXT_LIMIT = re.compile(
    r"(?:maximum context length is|context (?:window|size|length) of|available context size \()\s*(\d+)", re.IGNORECASE
)
#: Where servers say how long the prompt was, most specific first (the total requested when that is all they say).
_PROMPT_TOKENS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\((\d+) in the messages",
        r"resulted in (\d+) tokens",
        r"request \((\d+) tokens\)",
        r"requested tokens \((\d+)\)",
        r"requested (\d+) tokens",
    )
)


def context_overflow(status: int, body: Any, message: str) -> tuple[int | None, int | None] | None:
    """``(context limit, prompt tokens)`` (each ``None`` when not said) if an error says the prompt is too long.

    Recognises OpenAI's and vLLM's ``context_length_exceeded`` (``maximum context length is N tokens.
    However, your messages resulted in M tokens``), llama-cpp-python's (``... you requested T tokens
    (M in the messages, C in the completion)``) and llama.cpp's ``exceed_context_size_error``
    (``request (M tokens) exceeds the available context size (N tokens)``, with ``n_prompt_tokens`` and ``n_ctx``).
    """
    if status not in (400, 413):
        return None
    error = body.get("error", body) if isinstance(body, Mapping) else None
    fields = error if isinstance(error, Mapping) else {}
    code = " ".join(str(fields.get(name, "")) for name in ("code", "type"))
    if "context" not in code and not _CONTEXT_WORDS.search(message):
        return None
    limit = _int(fields.get("n_ctx")) or None
    prompt = _int(fields.get("n_prompt_tokens")) or None
    if limit is None and (found := _CONTEXT_LIMIT.search(message)):
        limit = int(found.group(1))
    if prompt is None:
        prompt = _prompt_tokens(message)
    return limit, prompt


def _prompt_tokens(message: str) -> int | None:
    for pattern in _PROMPT_TOKENS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def _body_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class ChatClient:
    """Chat completions with one model: temperature 0, a fixed seed, cached by full request.

    Every request carries ``max_tokens`` (the call's, else the client's ``max_tokens``): a model
    that never stops by itself must not generate until its context is full, past every timeout,
    while the server keeps generating for a client that gave up.
    """

    def __init__(
        self,
        endpoint: LLMEndpoint,
        model: str,
        *,
        cache: RequestCache,
        stats: LLMStats,
        seed: int = 42,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.endpoint = endpoint
        self.model = model
        self.cache = cache
        self.stats = stats
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, endpoint={display_url(self.endpoint.base_url)!r}, cache={self.cache.mode!r})"

    @property
    def context_tokens(self) -> int | None:
        """The model's context window in tokens (``--lens-llm-context``), ``None`` when the run did not say."""
        return self.endpoint.context_tokens

    @property
    def description(self) -> str:
        """``model at URL`` for reports."""
        return f"{self.model} at {display_url(self.endpoint.base_url)}"

    def with_model(self, model: str) -> ChatClient:
        """The same endpoint, cache, seed and token limit with another model."""
        return ChatClient(self.endpoint, model, **self._options())

    def with_max_tokens(self, max_tokens: int) -> ChatClient:
        """The same client with another default ``max_tokens``."""
        return ChatClient(self.endpoint, self.model, **{**self._options(), "max_tokens": max_tokens})

    def _options(self) -> dict[str, Any]:
        return {"cache": self.cache, "stats": self.stats, "seed": self.seed, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The request body :meth:`complete` sends (and caches under)."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(message) for message in messages],
            "temperature": self.temperature,
            "seed": repetition_seed(self.seed, current_repetition()),
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens,
        }
        if tools:
            request["tools"] = [dict(tool) for tool in tools]
            if tool_choice is not None:  # without tools, servers reject a tool_choice
                request["tool_choice"] = tool_choice
        if response_format is not None:
            request["response_format"] = dict(response_format)
        return request

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        purpose: str = "llm",
    ) -> ChatReply:
        """One chat completion, from the cache when recorded; :class:`LLMError` when it cannot be had.

        ``max_tokens`` defaults to the client's. ``purpose`` (agent, judge, baseline, an adapter's name) labels the cache entry
        and error messages; it is not part of the request. ``response_format`` (e.g.
        ``{"type": "json_object"}``, JSON mode) is sent, and keyed, only when given.
        """
        request = self.request(messages, tools=tools, tool_choice=tool_choice, max_tokens=max_tokens, response_format=response_format)
        keyed = {"base_url": self.endpoint.cache_identity, **request}
        if (repetition := current_repetition()) > 0:  # --lens-repeat: each repetition records and replays its own answer
            keyed["repetition"] = repetition
        keyed = mask_data(keyed)  # the cache stores the request: no secret quoted in a message goes with it
        key = request_key(keyed)
        if self.stats.counted_in_run:  # a stand-in's requests (the empty extractor's) are no part of the run's cache
            note_request(key)
        self.stats.add(requests=1)
        corrupted_before = self.cache.corrupted
        try:
            cached = self.cache.get(key, keyed, self._describe(purpose, messages))
        except LLMError:
            self.stats.add(failures=1, corrupted_entries=self.cache.corrupted - corrupted_before)
            raise
        if self.cache.corrupted != corrupted_before:
            self.stats.add(corrupted_entries=self.cache.corrupted - corrupted_before)
        if cached is not None:
            self.stats.add(cache_hits=1)
            self.endpoint.requested.set()  # nothing to wait for: a run answered from the cache must not hold its warm-up
            return ChatReply.from_response(cached, cached=True)
        self.stats.add(cache_misses=1)
        try:
            response = self.endpoint.create(request, self.stats)
        except LLMContextLengthError:
            self.stats.add(context_refusals=1)  # the caller may trim and resend; it counts a failure if it gives up
            raise
        except LLMTimeoutError as exc:
            self.stats.add(failures=1)
            raise LLMTimeoutError(
                f"{exc} (the {purpose} request's token cap: {_cap_option(purpose)})", timeout_s=exc.timeout_s, max_tokens=exc.max_tokens
            ) from None
        except LLMError:
            self.stats.add(failures=1)
            raise
        self.cache.put(key, keyed, mask_data(response), purpose=purpose)
        return ChatReply.from_response(response)

    def _describe(self, purpose: str, messages: Sequence[Mapping[str, Any]]) -> str:
        last = next((m.get("content") for m in reversed(messages) if isinstance(m.get("content"), str) and m.get("content")), "")
        snippet = " ".join(str(last).split())[:80]
        return f"the {purpose} request to {self.model} ({len(messages)} messages, last: {snippet!r})"
