"""Injectable faults: which requests fail, how, and whether a retry gets through."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

__all__ = ["Fault", "FaultKind"]

FaultKind = Literal["status", "slow", "malformed_tool_arguments", "content", "ramble", "not_json", "truncated", "gzip_bomb"]


@dataclass(frozen=True)
class Fault:
    """A fault applied to a deterministic share of the matching chat requests.

    - ``status``: answer with HTTP ``status`` and the error message ``text`` (429 and 5xx carry
      ``retry-after-ms: retry_after_ms``);
    - ``slow``: wait ``delay_s`` before answering (past the client's timeout, a timeout);
    - ``malformed_tool_arguments``: the reply's tool-call arguments are cut to invalid JSON;
    - ``content``: the reply's text is replaced by ``text`` (e.g. an unusable judge verdict);
    - ``ramble``: a model that never stops by itself: prose and no tool call, generated until the request's
      ``max_tokens`` or, without one, until the context is full (``finish_reason: length``; each token takes the
      server's ``seconds_per_token``);
    - ``not_json``: a 200 response whose body is an HTML error page (``text``, or a proxy's 502 page);
    - ``truncated``: a 200 JSON response cut off halfway (the body says its own, shorter, length);
    - ``gzip_bomb``: a 200 response with ``Content-Encoding: gzip`` whose body inflates to ``inflated_bytes``
      (white space, then the real completion: valid JSON for a client that reads it all; about 1 MB sent per GiB).

    ``rate`` selects that share of requests by a hash of the request body (and ``salt``),
    so the same request is always selected. ``permanent`` faults hit a selected request
    every time; transient ones only its first ``times`` attempts, so a retry gets through.
    ``only`` restricts the fault to one request kind (``agent``, ``judge``, ``meme_judge``, ``lme_judge``,
    ``baseline``, ``summary``, ``other``, ``embedding``; see :func:`~lens_fixtures.openai_server.classify`),
    ``contains`` to requests whose JSON body contains that text, and ``limit`` to its first
    ``limit`` firings over the server's life.
    """

    kind: FaultKind
    rate: float = 1.0
    status: int = 500
    permanent: bool = False
    times: int = 1
    delay_s: float = 0.0
    text: str = ""
    only: str | None = None
    retry_after_ms: int = 5
    limit: int | None = None
    contains: str | None = None
    salt: str = ""
    inflated_bytes: int = 2**30

    def selects(self, body: bytes, kind: str) -> bool:
        """Whether this fault applies to a request with this body and kind."""
        if self.only is not None and kind != self.only:
            return False
        if self.contains is not None and self.contains not in body.decode("utf-8", "replace"):
            return False
        if self.rate >= 1.0:
            return True
        digest = hashlib.sha256(self.salt.encode() + b"\x1f" + body).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.rate

    def fires(self, seen_before: int) -> bool:
        """Whether a selected request fails on this attempt (``seen_before`` earlier attempts of the same body)."""
        return self.permanent or seen_before < self.times
