"""The LLM resources of one process: endpoint, request cache, counters, and a client per model."""

from __future__ import annotations

from pathlib import Path

from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.settings import LLMSettings
from pytest_lens.llm.stats import LLMCounts, LLMStats
from pytest_lens.progress import ModelLoad

__all__ = ["LLMServices"]


class LLMServices:
    """Everything LLM-backed components of a run share: one endpoint, one cache, one set of counters.

    Nothing here touches the network or the disk until a component asks for a completion.
    """

    def __init__(self, settings: LLMSettings, *, seed: int, rootdir: Path) -> None:
        self.settings = settings
        self.seed = seed
        path = settings.cache_path
        self.cache = RequestCache(path if path.is_absolute() else rootdir / path, settings.cache_mode)
        self.stats = LLMStats()
        self.endpoint = LLMEndpoint(
            settings.base_url,
            api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            max_connections=settings.max_connections,
        )
        self._clients: dict[tuple[str, int], ChatClient] = {}

    def __repr__(self) -> str:
        return f"LLMServices({self.endpoint!r}, {self.cache!r})"

    def client(self, model: str, max_tokens: int) -> ChatClient:
        """The (shared) client for ``model`` whose requests carry ``max_tokens`` unless a call says otherwise."""
        key = (model, max_tokens)
        client = self._clients.get(key)
        if client is None:
            client = ChatClient(self.endpoint, model, cache=self.cache, stats=self.stats, seed=self.seed, max_tokens=max_tokens)
            self._clients[key] = client
        return client

    def agent_client(self) -> ChatClient | None:
        """The answering model's client (``--lens-agent-max-tokens``), when ``--lens-agent-model`` is set."""
        model = self.settings.agent_model
        return self.client(model, self.settings.agent_max_tokens) if model else None

    def judge_client(self) -> ChatClient | None:
        """The judge model's client (``--lens-judge-model``, else the agent model; ``--lens-judge-max-tokens``)."""
        model = self.settings.effective_judge_model
        return self.client(model, self.settings.judge_max_tokens) if model else None

    def judge_check_client(self) -> ChatClient | None:
        """The second judge's client (``--lens-judge-check-model``, else the judge's model), with the next request seed."""
        model = self.settings.judge_check_model or self.settings.effective_judge_model
        if not model:
            return None
        max_tokens = self.settings.judge_max_tokens
        return ChatClient(self.endpoint, model, cache=self.cache, stats=self.stats, seed=self.seed + 1, max_tokens=max_tokens)

    def component_client(self) -> ChatClient | None:
        """The client handed to LLM-backed adapters and agents (``lens_llm``): the agent model, else the judge's."""
        return self.agent_client() or self.judge_client()

    def share_slots(self, directory: Path | None) -> None:
        """Share the server's slots with the run's other processes through ``directory`` (see :meth:`LLMEndpoint.share_slots`)."""
        self.endpoint.share_slots(directory)

    def load(self) -> ModelLoad:
        """What the model has done so far in this process and is doing now, for progress lines."""
        load = self.stats.load()
        limiter = self.endpoint.limiter
        return ModelLoad(load.answered, load.completion_tokens, limiter.in_flight, limiter.waiting)

    def counts(self) -> LLMCounts:
        """Requests counted so far in this process."""
        return self.stats.snapshot()

    def close(self) -> None:
        """Close the cache connection."""
        self.cache.close()
