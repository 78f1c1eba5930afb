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
        self.endpoint = self._endpoint(settings.base_url)
        #: The judge's endpoint: its own with ``--lens-judge-base-url``, else the run's.
        self.judge_endpoint = self.endpoint
        if settings.judge_base_url and settings.judge_base_url.rstrip("/") != (settings.base_url or "").rstrip("/"):
            self.judge_endpoint = self._endpoint(settings.judge_base_url)
        self._clients: dict[tuple[str, int, str | None], ChatClient] = {}

    def __repr__(self) -> str:
        return f"LLMServices({self.endpoint!r}, {self.cache!r})"

    def _endpoint(self, base_url: str | None) -> LLMEndpoint:
        """An endpoint at ``base_url`` with the run's key, timeouts, retries, connections and context."""
        settings = self.settings
        return LLMEndpoint(
            base_url,
            api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            max_connections=settings.max_connections,
            context_tokens=settings.context_tokens,
        )

    def client(self, model: str, max_tokens: int, endpoint: LLMEndpoint | None = None) -> ChatClient:
        """The (shared) client for ``model`` at ``endpoint`` (the run's) whose requests carry ``max_tokens`` unless a call asks less."""
        endpoint = endpoint or self.endpoint
        key = (model, max_tokens, endpoint.base_url)
        client = self._clients.get(key)
        if client is None:
            client = ChatClient(endpoint, model, cache=self.cache, stats=self.stats, seed=self.seed, max_tokens=max_tokens)
            self._clients[key] = client
        return client

    def agent_client(self) -> ChatClient | None:
        """The answering model's client (``--lens-agent-max-tokens``), when ``--lens-agent-model`` is set."""
        model = self.settings.agent_model
        return self.client(model, self.settings.agent_max_tokens) if model else None

    def judge_client(self) -> ChatClient | None:
        """The judge model's client (``--lens-judge-model``, else the agent model; ``--lens-judge-max-tokens``), at the judge's endpoint."""
        model = self.settings.effective_judge_model
        return self.client(model, self.settings.judge_max_tokens, self.judge_endpoint) if model else None

    def judge_check_client(self) -> ChatClient | None:
        """The second judge's client (``--lens-judge-check-model``, else the judge's model), with the next request seed."""
        model = self.settings.judge_check_model or self.settings.effective_judge_model
        if not model:
            return None
        max_tokens = self.settings.judge_max_tokens
        return ChatClient(self.judge_endpoint, model, cache=self.cache, stats=self.stats, seed=self.seed + 1, max_tokens=max_tokens)

    def component_client(self) -> ChatClient | None:
        """The client handed to LLM-backed adapters and agents (``lens_llm``): the agent model, else the judge's (at the run's endpoint)."""
        if self.settings.agent_model:
            return self.agent_client()
        model = self.settings.effective_judge_model
        return self.client(model, self.settings.judge_max_tokens) if model else None

    def share_slots(self, directory: Path | None) -> None:
        """Share the server's slots with the run's other processes through ``directory`` (see :meth:`LLMEndpoint.share_slots`)."""
        self.endpoint.share_slots(directory)
        if self.judge_endpoint is not self.endpoint:
            self.judge_endpoint.share_slots(directory / "judge" if directory is not None else None)

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
