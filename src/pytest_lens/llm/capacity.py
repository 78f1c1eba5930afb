"""What an endpoint can serve at once, asked of the server itself where it says (llama.cpp's ``/props`` and ``/slots``).

A local server generates a fixed number of completions at once (llama.cpp's ``llama-server -np N`` slots) and
queues the rest. Requests queued there time out while they wait, are sent again, and queue once more behind the
work the server still does for the client that gave up. So before the first request an endpoint is asked:

- ``GET <root>/props`` (llama.cpp's ``llama-server``): ``total_slots``, the completions it generates at once,
  and ``default_generation_settings.n_ctx``, each slot's context;
- ``GET <root>/slots`` (llama.cpp, unless started with ``--no-slots``): which slots are generating now. After a
  timeout the request's place is held until a slot is free again, so the retry is not queued behind the
  abandoned generation (``llama-server`` stops it when the client disconnects; llama-cpp-python's server does not).

``<root>`` is the base URL without its ``/v1``. vLLM, Ollama and hosted APIs have no such endpoint (vLLM batches
up to its ``--max-num-seqs``; Ollama queues beyond ``OLLAMA_NUM_PARALLEL`` and does not say how many): for them
the capacity is unknown and :class:`~pytest_lens.llm.limiter.ConnectionLimiter` adapts, halving on a timeout.

The probes go through the run's own HTTP client (:func:`~pytest_lens.llm.deadline.deadline_http_client`): its
redirect rules (a redirect to another origin does not carry the ``Authorization`` header), its body cap, and a
deadline on each whole response of :data:`PROBE_TIMEOUT_S` (a server that drip-feeds its answer is cut off, not
waited on). Never an error: a server that does not answer is a server whose capacity is unknown. A server that says
more than :data:`MAX_SLOTS` slots is taken at :data:`MAX_SLOTS` (each slot is a lock file shared between a run's
processes, and no run keeps more requests in flight than that).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_SLOTS", "PROBE_TIMEOUT_S", "ServerCapacity", "http_getter", "probe_capacity", "server_root"]

#: Seconds a probe of ``/props`` or ``/slots`` may take, its whole response (a local server answers in milliseconds).
PROBE_TIMEOUT_S = 3.0
#: The most slots a server is taken to have: far above any ``--lens-max-connections`` (16 by default).
MAX_SLOTS = 1024

#: ``GET url`` (with the API key, if any) as JSON, or ``None`` on any failure.
Getter = Callable[[str, "str | None"], Any]


@dataclass(frozen=True)
class ServerCapacity:
    """What the server said about itself; ``slots`` is ``None`` when it said nothing."""

    #: Completions the server generates at once (llama.cpp's ``total_slots``).
    slots: int | None = None
    #: Each slot's context in tokens (llama.cpp's ``n_ctx``), when said.
    context_tokens: int | None = None
    #: Where the busy slots can be read (``GET`` it for a list with ``is_processing``), when the server has it.
    slots_url: str | None = None
    #: How it was found, for the run's notes: ``llama.cpp /props``, or why it is unknown.
    source: str = "unknown"
    #: Whether the server's chat template renders tools (llama.cpp's ``chat_template_caps.supports_tools`` with
    #: ``--jinja``); ``None`` when it does not say. ``False``: the model never sees the memory's tools.
    template_tools: bool | None = None
    #: How ``/slots`` is read again (the probe's getter).
    fetch: Getter | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """One phrase for the run's notes."""
        if self.slots is None:
            return f"server capacity unknown ({self.source}): in-flight requests adapt to timeouts and 429/503 answers"
        context = f", {self.context_tokens:,} tokens of context each" if self.context_tokens else ""
        described = f"server serves {self.slots} request(s) at once ({self.source}{context})"
        if self.template_tools is False:
            described += (
                "; its chat template does not render tools (chat_template_caps.supports_tools is false): the model will not "
                "see the memory's tools; see docs/servers/llama-server.md"
            )
        return described

    def idle_slots(self, api_key: str | None = None) -> int | None:
        """Slots not generating now (``GET /slots``); ``None`` when the server does not say."""
        if self.slots_url is None or self.fetch is None:
            return None
        data = self.fetch(self.slots_url, api_key)
        if not isinstance(data, list):
            return None
        return sum(1 for slot in data if isinstance(slot, dict) and slot.get("is_processing") is False)

    def wait_for_idle_slot(self, deadline_s: float, api_key: str | None = None, *, poll_s: float = 0.5) -> bool:
        """Wait (up to ``deadline_s`` seconds) until a slot is free; ``False`` when none freed up or the server does not say."""
        if self.slots_url is None:
            return False
        end = time.monotonic() + deadline_s
        while True:
            idle = self.idle_slots(api_key)
            if idle is None:
                return False
            if idle > 0:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(poll_s)


def server_root(base_url: str) -> str:
    """The server's root: ``base_url`` without a trailing ``/v1`` (``http://host:8080/v1`` -> ``http://host:8080``)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def probe_capacity(base_url: str | None, api_key: str | None = None, *, get: Getter | None = None) -> ServerCapacity:
    """Ask the server at ``base_url`` how many requests it serves at once (see the module docstring).

    ``get``: how to ask (:func:`http_getter` of the run's HTTP client); by default a client of its own, built alike.
    """
    if not base_url:
        return ServerCapacity(source="hosted API")
    fetch = get or http_getter(None)
    root = server_root(base_url)
    props = fetch(f"{root}/props", api_key)
    total = props.get("total_slots") if isinstance(props, dict) else None
    if not isinstance(props, dict) or not isinstance(total, int) or not _positive(total):
        return ServerCapacity(source="no /props with total_slots at the server's root")
    said = ""
    if total > MAX_SLOTS:
        said, total = f" said {_shown_count(total)} slots, taken as {MAX_SLOTS:,}", MAX_SLOTS
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    caps = props.get("chat_template_caps")
    tools = caps.get("supports_tools") if isinstance(caps, dict) else None
    slots_url = f"{root}/slots"
    listed = fetch(slots_url, api_key)
    readable = isinstance(listed, list) and all(isinstance(slot, dict) and "is_processing" in slot for slot in listed)
    return ServerCapacity(
        slots=total,
        context_tokens=n_ctx if isinstance(n_ctx, int) and _positive(n_ctx) else None,
        slots_url=slots_url if readable else None,
        source="llama.cpp /props" + (" and /slots" if readable else "") + said,
        template_tools=tools if isinstance(tools, bool) else None,
        fetch=fetch,
    )


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _shown_count(count: int) -> str:
    digits = len(str(count))
    return f"{count:,}" if digits <= 12 else f"about 10^{digits - 1}"


def http_getter(http: Any) -> Getter:
    """``GET url`` as JSON through ``http``, the run's HTTP client (``None``: one built as the run builds its own).

    Each response must be whole within :data:`PROBE_TIMEOUT_S` and under the body cap; any failure (no route, a
    status other than 200, not JSON, refused, slow, too large) is ``None``.
    """
    client = http if http is not None else _own_client()

    def get(url: str, api_key: str | None) -> Any:
        if client is None:
            return None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        try:
            response = client.get(url, headers=headers, timeout=PROBE_TIMEOUT_S)
            return json.loads(response.content) if response.status_code == 200 else None
        except Exception:  # the HTTP library's errors, the body cap, JSON: the capacity is then unknown, never an error
            return None

    return get


def _own_client() -> Any:
    """The run's kind of HTTP client, with the probe's deadline; ``None`` without the ``openai`` package."""
    try:
        import openai
    except ImportError:
        return None
    from pytest_lens.llm.bounded import http_library
    from pytest_lens.llm.deadline import deadline_http_client

    return deadline_http_client(openai, http_library(openai), PROBE_TIMEOUT_S)
