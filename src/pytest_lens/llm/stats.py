"""Counting LLM requests: cache hits and misses, HTTP attempts, retries and failures."""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields

__all__ = ["LLMCounts", "LLMStats"]


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

    def __sub__(self, other: LLMCounts) -> LLMCounts:
        return LLMCounts(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def __add__(self, other: LLMCounts) -> LLMCounts:
        return LLMCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


class LLMStats:
    """Thread-safe running counts for one process (judgments may run on worker threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {f.name: 0 for f in fields(LLMCounts)}

    def add(self, **increments: int) -> None:
        """Increase named counters, e.g. ``add(requests=1, cache_hits=1)``."""
        with self._lock:
            for name, value in increments.items():
                self._counts[name] += value

    def snapshot(self) -> LLMCounts:
        """The counts so far."""
        with self._lock:
            return LLMCounts(**self._counts)
