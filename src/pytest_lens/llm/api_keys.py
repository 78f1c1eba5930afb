"""The API keys pytest-lens reads, and masking them out of every message built from what a server said.

Servers and proxies echo requests in their error bodies, ``Authorization: Bearer <key>`` included.
Every client (the chat client behind the agent, the judges and ``lens generate``; the embedding
client) reads its key through :func:`read_api_key`, which remembers the value, and passes every
error message it builds through :func:`mask_keys`, which replaces each key it knows with ``***``:
the keys read so far and those in :data:`KNOWN_KEY_ENVS`. A key therefore never reaches the
terminal, the ``--lens-json`` artifact, the JUnit XML or the HTML report by way of an error.
"""

from __future__ import annotations

import os
import threading

__all__ = ["KNOWN_KEY_ENVS", "MASK", "mask_keys", "read_api_key"]

#: What a key becomes in messages.
MASK = "***"
#: Environment variables holding keys pytest-lens reads without being told (the LLM client's is ``--lens-llm-api-key-env``).
KNOWN_KEY_ENVS = ("OPENAI_API_KEY", "LENS_EMBEDDING_API_KEY")
#: Shorter values are not masked: replacing every "ab" in a message would garble it and hide nothing.
_MIN_LENGTH = 4
_read: set[str] = set()
_lock = threading.Lock()


def read_api_key(*names: str) -> str | None:
    """The value of the first of the environment variables ``names`` that is set and non-empty, or ``None``.

    The value is remembered, so that :func:`mask_keys` hides it in every later message of this process.
    """
    for name in names:
        value = os.environ.get(name)
        if value:
            with _lock:
                _read.add(value)
            return value
    return None


def mask_keys(text: str) -> str:
    """``text`` with every API key read so far, or held in :data:`KNOWN_KEY_ENVS`, replaced by :data:`MASK`."""
    with _lock:
        keys = set(_read)
    keys.update(value for name in KNOWN_KEY_ENVS if (value := os.environ.get(name)))
    # Longest first: a key that contains another is masked whole.
    for key in sorted((key for key in keys if len(key) >= _MIN_LENGTH), key=len, reverse=True):
        text = text.replace(key, MASK)
    return text
