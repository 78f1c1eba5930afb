"""The empty extractor the ``empty-extraction`` control builds its memory with.

For every user adapter declaring ``lens_model_built`` (its memory is written by the model it
is given as ``lens_llm``), ``--lens-controls`` adds ``<label>/empty-extraction``: the same class
and options, its ``lens_llm`` pointed at a local scripted server whose replies are well formed
and extract nothing (no fact, no entity, no edge, summaries that say nothing, an agent that
writes no memory). Answering and judging use the run's model as for every adapter. If the
adapter scores as well with that memory as with the one the model built, its score does not
measure what the model built; the sensitivity table flags it.

The server is the project's scripted test server (``lens_fixtures.openai_server``) in its
empty-extractor mode, loaded by name: the core never imports ``lens_fixtures``. One per
process, started on first use, on 127.0.0.1. Its requests cost nothing and are never cached
(a fresh port each run would never hit a cache); they are not the run's model's, so they stay
out of the run's LLM request counts (the adapter's own counters, ``lens_stats``, count them).
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Any

__all__ = ["EMPTY_EXTRACTOR", "empty_extraction_client", "stop_empty_extractor"]

#: What starts the empty extractor: a function returning a started server with ``base_url`` and ``stop()``.
EMPTY_EXTRACTOR = "lens_fixtures.openai_server.empty:serve_empty_extractor"

_LOCK = threading.Lock()
_SERVER: Any = None


def _server() -> Any:
    global _SERVER
    with _LOCK:
        if _SERVER is None:
            module, _, name = EMPTY_EXTRACTOR.partition(":")
            _SERVER = getattr(importlib.import_module(module), name)()
        return _SERVER


def empty_extraction_client(lens_llm: Any) -> Any:
    """A client like ``lens_llm`` (model, seed, token cap) whose requests the empty extractor answers; ``None`` stays ``None``.

    Without a run's model there is nothing to compare: the adapter is unavailable either way.
    """
    if lens_llm is None:
        return None
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.client import ChatClient, LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    endpoint = LLMEndpoint(_server().base_url, api_key_env=lens_llm.endpoint.api_key_env, retries=0, context_tokens=lens_llm.context_tokens)
    return ChatClient(
        endpoint,
        lens_llm.model,
        cache=RequestCache(Path("empty-extractor.sqlite"), "off"),
        stats=LLMStats(counted_in_run=False),
        seed=lens_llm.seed,
        temperature=lens_llm.temperature,
        max_tokens=lens_llm.max_tokens,
    )


def stop_empty_extractor() -> None:
    """Stop this process's empty extractor, if one was started (the next use starts another)."""
    global _SERVER
    with _LOCK:
        server, _SERVER = _SERVER, None
    if server is not None:
        server.stop()
