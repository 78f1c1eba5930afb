"""The scripted model the LLM-built memories' tests talk to: the project's OpenAI-compatible server, a cached client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.settings import CacheMode
from pytest_lens.llm.stats import LLMStats


def scripted_client(server: OpenAITestServer, cache: Path, mode: CacheMode = "record") -> ChatClient:
    """A chat client for model ``m`` on ``server``, its requests through the cache at ``cache`` (``record``, ``replay``, ``off``)."""
    return client_at(server.base_url, cache, mode)


def client_at(base_url: str, cache: Path, mode: CacheMode = "record", **endpoint: Any) -> ChatClient:
    """A chat client for model ``m`` at ``base_url`` (up or not), with :class:`LLMEndpoint` options ``endpoint``."""
    return ChatClient(
        LLMEndpoint(base_url, api_key_env="LENS_TEST_KEY", **endpoint), "m", cache=RequestCache(cache, mode), stats=LLMStats()
    )
