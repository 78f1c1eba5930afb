"""LLM endpoint, judge and cache settings (stdlib only: read by the plugin at start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "CACHE_MODES",
    "DEFAULT_AGENT_MAX_TOKENS",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_CACHE_PATH",
    "DEFAULT_JUDGE_MAX_TOKENS",
    "DEFAULT_JUDGE_SHORT_MAX_TOKENS",
    "DEFAULT_MAX_TOKENS",
    "JUDGE_KINDS",
    "TIMEOUT_BASE_S",
    "TIMEOUT_S_PER_PROMPT_TOKEN",
    "TIMEOUT_S_PER_TOKEN",
    "CacheMode",
    "JudgeKind",
    "LLMSettings",
    "auto_timeout_s",
    "display_url",
]

CacheMode = Literal["record", "replay", "off"]
JudgeKind = Literal["none", "offline", "llm"]

CACHE_MODES: tuple[CacheMode, ...] = ("record", "replay", "off")
JUDGE_KINDS: tuple[JudgeKind, ...] = ("none", "offline", "llm")
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: Relative to the pytest root directory.
DEFAULT_CACHE_PATH = Path(".lens") / "llm-cache.sqlite"
#: Every request carries a ``max_tokens``: this one unless its caller (or an option) gives another.
DEFAULT_MAX_TOKENS = 2048
#: The agent's turns and the naive baseline's answer (``--lens-agent-max-tokens``): the prompt asks for "a clear,
#: concise answer" with a citation per claim, a few hundred tokens; a tool call is a few dozen. 512 leaves room and
#: keeps a model that never stops from generating for minutes on a CPU server.
DEFAULT_AGENT_MAX_TOKENS = 512
#: ``--lens-llm-timeout`` unset: each request's timeout is this, plus the time its ``max_tokens`` take at
#: 4 tokens a second, plus its prompt at 100 tokens a second (a small model on a CPU core, shared by 4 slots).
TIMEOUT_BASE_S = 60.0
TIMEOUT_S_PER_TOKEN = 0.25
TIMEOUT_S_PER_PROMPT_TOKEN = 0.01
#: Judge replies with a reason: MEME's and LongMemEval's JSON verdicts (``--lens-judge-max-tokens``).
DEFAULT_JUDGE_MAX_TOKENS = 512
#: Judge replies of one word: the pairwise ``A`` / ``B`` / ``TIE`` (``--lens-judge-short-max-tokens``).
DEFAULT_JUDGE_SHORT_MAX_TOKENS = 16


@dataclass(frozen=True)
class LLMSettings:
    """How to reach the LLM endpoint, which models to use, how to judge, and how to cache.

    The API key itself is never stored here: only the *name* of the environment
    variable that holds it, so settings can be printed, pickled and recorded.
    """

    base_url: str | None = None
    agent_model: str | None = None
    judge_model: str | None = None
    #: ``--lens-judge-base-url``: the judge's own endpoint (``None``: the judge asks ``base_url``).
    judge_base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    judge: JudgeKind = "none"
    cache_mode: CacheMode = "record"
    cache_path: Path = DEFAULT_CACHE_PATH
    #: Seconds per LLM request (``--lens-llm-timeout``); ``None``: sized per request by :func:`auto_timeout_s`.
    timeout_s: float | None = None
    retries: int = 4
    #: The run is flagged when more than this fraction of an adapter's questions had a judge failure.
    judge_max_failure_rate: float = 0.05
    #: ``max_tokens`` of the agent's requests and the naive baseline's answer.
    agent_max_tokens: int = DEFAULT_AGENT_MAX_TOKENS
    #: ``max_tokens`` of judge requests answered with a reason (JSON verdicts).
    judge_max_tokens: int = DEFAULT_JUDGE_MAX_TOKENS
    #: ``max_tokens`` of judge requests answered with one word (``A``, ``B`` or ``TIE``).
    judge_short_max_tokens: int = DEFAULT_JUDGE_SHORT_MAX_TOKENS
    #: The answering model's context window in tokens (``--lens-llm-context``); sizes the naive baseline's prompt.
    context_tokens: int | None = None
    #: The run fails when more than this fraction of an adapter's questions could not be measured (model unreachable).
    max_not_measured_rate: float = 0.05
    #: ``--lens-max-connections``: LLM requests in flight at once per process (the adaptive limit's ceiling).
    max_connections: int = 16
    #: ``--lens-judge-check``: answers (questions) whose judgments a second judge grades again (0: none).
    judge_check: int = 0
    #: ``--lens-judge-check-model``: the second judge's model (default: the judge's own, positions swapped).
    judge_check_model: str | None = None
    #: Below this Cohen's kappa between the two judges, the summary and the artifact warn.
    judge_check_min_kappa: float = 0.4

    @property
    def configured(self) -> bool:
        """An endpoint or a model was given, so LLM-backed components (e.g. the compaction adapter) can run."""
        return bool(self.base_url or self.agent_model or self.judge_model)

    @property
    def effective_judge_model(self) -> str | None:
        """The judge's model: ``judge_model``, else the agent's."""
        return self.judge_model or self.agent_model


def auto_timeout_s(max_tokens: int, prompt_chars: int) -> float:
    """A request's timeout when ``--lens-llm-timeout`` is not given: scaled to what it asks the model to read and write.

    ``prompt_chars`` over 4 estimates the prompt's tokens. 512 tokens and a short prompt: 188 s; a 16k-token naive
    baseline prompt adds about 160 s.
    """
    return round(TIMEOUT_BASE_S + max_tokens * TIMEOUT_S_PER_TOKEN + prompt_chars / 4 * TIMEOUT_S_PER_PROMPT_TOKEN, 1)


def display_url(url: str | None) -> str:
    """``url`` for reports, its secrets masked (user-info, key-like query parameters); the OpenAI default when ``None``."""
    if not url:
        return "https://api.openai.com/v1 (default)"
    from pytest_lens.llm.api_keys import mask_secrets, remember_url

    remember_url(url)
    return mask_secrets(url)


def split_base_url(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query string, and the query's parameters (sent as parameters of every request).

    The SDK appends a request's path to its base URL's text, query and all: ``http://host/v1?api-version=1`` would
    send ``/v1?api-version=1/chat/completions``. Split, every request goes to ``http://host/v1/chat/completions``
    with ``?api-version=1`` (Azure's style, or a gateway's ``?api_key=``).
    """
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    return urlunsplit(parts._replace(query="")).rstrip("/"), dict(parse_qsl(parts.query, keep_blank_values=True))
