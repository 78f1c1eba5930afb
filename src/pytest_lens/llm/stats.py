"""Counting LLM requests: cache hits and misses, HTTP attempts, retries and failures.

Counts are kept per process (:class:`LLMStats`) and, with :func:`counting`, per piece of
work: every request made in that context, or in a context copied from it (a worker thread
answering the question, a judge thread, the adapter thread running a call on its behalf),
is counted there too. That is how each question gets its own counts when questions run
concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields

__all__ = ["LOAD_FIELDS", "LLMCounts", "LLMLoad", "LLMStats", "counting", "note_request"]


@dataclass(frozen=True)
class LLMCounts:
    """LLM request counts over some span of a run (one question, or a whole process)."""

    #: Chat completions asked for (agent turns, judgments, baseline answers, adapter summaries).
    requests: int = 0
    #: Answered from the request cache, without contacting the endpoint.
    cache_hits: int = 0
    #: Not in the cache (or cache off): sent to the endpoint.
    cache_misses: int = 0
    #: HTTP requests sent, retries included.
    http_requests: int = 0
    #: Attempts repeated after a 429, a 5xx, a timeout, a connection error or a bad response.
    retries: int = 0
    #: 200 responses that were no usable completion (not JSON, cut off, no choices); retried like a 5xx.
    bad_responses: int = 0
    #: Requests that failed for good (after retries, or a replay miss).
    failures: int = 0
    #: Corrupted cache entries ignored.
    corrupted_entries: int = 0
    #: Requests answered after a retry (a timeout, a 5xx, a bad response): counted here, not in ``failures``.
    recovered: int = 0
    #: Requests the server refused as longer than the model's context (the caller may trim and send again).
    context_refusals: int = 0

    def __sub__(self, other: LLMCounts) -> LLMCounts:
        return LLMCounts(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def __add__(self, other: LLMCounts) -> LLMCounts:
        return LLMCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class LLMLoad:
    """Time and tokens of the requests sent: how the server was kept busy (wall-clock, so never compared between runs)."""

    #: Seconds requests waited for a place before being sent (queued in this process because the server was full),
    #: and after a timeout for the server to free the slot the abandoned request held.
    wait_s: float = 0.0
    #: Seconds requests were in the server's hands (sent until answered or timed out).
    served_s: float = 0.0
    #: Completions the endpoint answered (sent and come back usable).
    answered: int = 0
    #: Tokens the endpoint reported reading (prompts) and generating (completions).
    prompt_tokens: int = 0
    completion_tokens: int = 0


#: The names :meth:`LLMStats.add` files under :class:`LLMLoad` rather than :class:`LLMCounts`.
LOAD_FIELDS = frozenset(f.name for f in fields(LLMLoad))


class LLMStats:
    """Thread-safe running counts for one process (judgments may run on worker threads).

    ``counted_in_run=False``: counts kept here only, never in the :func:`counting` blocks around them (the requests of
    a stand-in model that is not the run's, such as the empty-extraction control's scripted server).
    """

    def __init__(self, *, counted_in_run: bool = True) -> None:
        self._counted_in_run = counted_in_run
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {f.name: 0 for f in fields(LLMCounts)}
        self._load: dict[str, float] = {f.name: 0 for f in fields(LLMLoad)}
        self._outer: LLMStats | None = None
        #: Cache keys of the requests made inside this :func:`counting` block (a process's own stats keep none).
        self._requested: set[str] = set()

    def add(self, **increments: float) -> None:
        """Increase named counters, e.g. ``add(requests=1, cache_hits=1)`` (and those of the current :func:`counting`).

        :class:`LLMLoad`'s names (``wait_s``, ``served_s``, tokens) go to :meth:`load`, the others to :meth:`snapshot`.
        """
        self._add(increments)
        local = _CURRENT.get() if self._counted_in_run else None
        while local is not None:  # the innermost counting() block and every block around it
            if local is not self:
                local._add(increments)
            local = local._outer

    def _add(self, increments: dict[str, float]) -> None:
        with self._lock:
            for name, value in increments.items():
                if name in LOAD_FIELDS:
                    self._load[name] += value
                else:
                    self._counts[name] += int(value)

    @property
    def counted_in_run(self) -> bool:
        """Whether these requests are the run's (counted in its :func:`counting` blocks, their keys noted)."""
        return self._counted_in_run

    def requested(self) -> list[str]:
        """The cache keys of the requests made inside this :func:`counting` block, sorted (what a replay of it needs)."""
        with self._lock:
            return sorted(self._requested)

    def snapshot(self) -> LLMCounts:
        """The counts so far."""
        with self._lock:
            return LLMCounts(**self._counts)

    def load(self) -> LLMLoad:
        """Time and tokens so far."""
        with self._lock:
            load = dict(self._load)
        return LLMLoad(
            wait_s=round(load["wait_s"], 4),
            served_s=round(load["served_s"], 4),
            answered=int(load["answered"]),
            prompt_tokens=int(load["prompt_tokens"]),
            completion_tokens=int(load["completion_tokens"]),
        )


_CURRENT: ContextVar[LLMStats | None] = ContextVar("lens_llm_counting", default=None)


def note_request(key: str) -> None:
    """Note a request by its cache key in the current :func:`counting` block and every block around it.

    A question's blocks collect the keys its result records (``QuestionResult.llm_requests``): ``lens bundle`` takes
    exactly those entries of the request cache.
    """
    local = _CURRENT.get()
    while local is not None:
        with local._lock:
            local._requested.add(key)
        local = local._outer


@contextmanager
def counting() -> Iterator[LLMStats]:
    """Count, apart, the LLM requests made inside the block (in this context and contexts copied from it).

    Threads start with an empty context: code that hands work to other threads copies its
    context (``contextvars.copy_context().run``) to keep that work counted here.
    """
    stats = LLMStats()
    stats._outer = _CURRENT.get()
    token = _CURRENT.set(stats)
    try:
        yield stats
    finally:
        _CURRENT.reset(token)
