"""Which repetition of a question is being answered (``--lens-repeat``), for the LLM requests made meanwhile.

The engine answers and scores repetition *r* of a question inside :func:`at_repetition`; every
:class:`~pytest_lens.llm.client.ChatClient` request made in that context (agent, judge; in this thread,
or in threads started with a copy of the context) carries the seed :func:`repetition_seed` draws for
*r*, and its cache key carries *r*, so repetitions are distinct requests that each record and replay.
Repetition 0 keeps the run's seed and the cache keys of a run without repetitions. Ingestion and
``prepare`` happen outside the context: repetitions of a question see the same memory state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["at_repetition", "current_repetition", "repetition_seed"]

_CURRENT: ContextVar[int] = ContextVar("lens_repetition", default=0)


def current_repetition() -> int:
    """The repetition being answered (0 outside :func:`at_repetition`)."""
    return _CURRENT.get()


@contextmanager
def at_repetition(index: int) -> Iterator[None]:
    """Answer (and judge) repetition ``index`` of a question within this block."""
    token = _CURRENT.set(index)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def repetition_seed(seed: int, index: int) -> int:
    """The seed of repetition ``index``: ``seed`` itself for 0, else a 31-bit value drawn from (seed, index).

    Drawn rather than ``seed + index`` so that repetition 1 of ``--lens-seed=42`` is not the same request as
    repetition 0 of ``--lens-seed=43``.
    """
    if index == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}/{index}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF
