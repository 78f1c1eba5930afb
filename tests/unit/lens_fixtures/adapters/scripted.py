"""The scripted model the LLM-built memories' tests talk to: the project's OpenAI-compatible server, a cached client."""

from __future__ import annotations

from pathlib import Path

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats


def scripted_client(server: OpenAITestServer, cache: Path, mode: str = "record") -> ChatClient:
    """A chat client for model ``m`` on ``server``, its requests through the cache at ``cache`` (``record``, ``replay``, ``off``)."""
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY")
    return ChatClient(endpoint, "m", cache=RequestCache(cache, mode), stats=LLMStats())  # type: ignore[arg-type]
