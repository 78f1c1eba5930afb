"""Secrets: the API keys pytest-lens reads or is given, and masking them out of everything it writes.

One function, :func:`mask_secrets`, hides every secret in a text; every place pytest-lens writes (the
terminal, the ``--lens-json`` artifact, the HTML report, saved runs, JUnit XML, the LLM request cache
and the embedding cache's keys) passes what it writes through it, or through :func:`mask_data`, which
applies it to every string of a JSON value. It replaces with :data:`MASK`:

- every key it knows: the values of :data:`KNOWN_KEY_ENVS`, the keys read through :func:`read_api_key`
  and the values handed to :func:`remember_secret` (adapter options and environment entries whose names look
  like secrets, the values of command-line flags named like secrets (:func:`remember_arguments`), the password
  and secret query parameters of every endpoint URL, and the ``Basic`` credentials they make);
- what looks like a secret wherever it appears: the user-info of a URL (``http://user:***@host``), query
  parameters named like keys (``?api_key=***``), ``Authorization`` headers and ``Bearer``/``Basic``
  credentials, ``name=value`` and ``"name": "value"`` pairs whose name looks like a secret
  (``api_key``, any ``*_token``, ``password``, ``secret``, ...), and OpenAI-style ``sk-...`` keys.

Servers and proxies echo requests in their error bodies, ``Authorization: Bearer <key>`` included, and a
model may quote a key it was shown: both are masked on the way out. The caches are keyed on
:func:`mask_secrets` of the endpoint, so two keys for one endpoint share its entries and neither is stored.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "KNOWN_KEY_ENVS",
    "MASK",
    "holds_known_secret",
    "looks_secret",
    "mask_data",
    "mask_keys",
    "mask_secrets",
    "masked_options",
    "read_api_key",
    "remember_arguments",
    "remember_options",
    "remember_secret",
    "remember_url",
]

#: What a secret becomes.
MASK = "***"
#: Environment variables holding keys pytest-lens reads without being told (the LLM client's is ``--lens-llm-api-key-env``).
KNOWN_KEY_ENVS = ("OPENAI_API_KEY", "LENS_EMBEDDING_API_KEY")
#: Shorter values are not masked: replacing every "ab" in a message would garble it and hide nothing.
_MIN_LENGTH = 4
_known: set[str] = set()
_lock = threading.Lock()

#: Words that make a name (an option, a query parameter, a JSON field) a secret's.
_SECRET_WORDS = r"api[_-]?key|apikey|access[_-]?key|secret|token|password|passwd|passphrase|credentials?|auth|authorization|private[_-]?key"
#: A name ending in one of them (``api_key``, ``db_password``, ``access_token``; not ``max_tokens`` or ``key_facts``).
_SECRET_NAME = re.compile(rf"(?:^|[\W_])(?:{_SECRET_WORDS})$|^(?:key|pwd|sig|signature)$", re.IGNORECASE)
#: ``scheme://user:password@`` (the whole user-info is masked: a lone user name is often the token).
_USERINFO = re.compile(r"(?<=://)[^/\s@?#'\"<>\\]+@")
#: ``?api_key=...`` / ``&key=...`` / ``&amp;token=...`` (in HTML).
_QUERY = re.compile(rf"(?P<head>[?&;](?:[\w.-]*?(?:{_SECRET_WORDS})|key|sig|signature)=)(?P<value>[^&#\s'\"<>\\]+)", re.IGNORECASE)
_QUERY_ANCHORS = ("key", "secret", "token", "pass", "auth", "cred", "sig")
#: ``Authorization: Basic ...``, ``authorization="..."``, ``"Authorization": "Bearer ..."``.
_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|token|digest)\s+)?)(?P<value>[^\s\"',;)}\]>\\]+)",
    re.IGNORECASE,
)
#: ``Bearer <token>`` / ``Basic <base64>`` anywhere (a credential has a digit or a symbol, prose has neither).
_SCHEME = re.compile(r"(?P<head>(?:Bearer|Basic)\s+)(?P<value>(?=[\w.~+/=-]*[\d.~+/=_-])[\w.~+/=-]{8,})")
#: ``api_key=...``, ``"api_key": "..."``, ``access_token='...'``: names no data would use for anything else, and a
#: value with a letter in it (``invalid_password: 1411`` and ``/auth: 152300`` are a dataset's counters, not secrets).
_KEY_NAMES = (
    r"api[_-]?key|apikey|(?:access|secret|private)[_-]?key|client[_-]?secret|[a-z0-9]+[_-]token|"
    r"(?:^|[^a-z0-9])(?:token|secret|password|passwd)"
)
#: Where a pair can be: each anchor is found by plain string search, then the name around it is checked.
_KEY_ANCHORS = ("key", "secret", "token", "password", "passwd")
_PAIR_NAME = re.compile(rf"(?:{_KEY_NAMES})$")
_PAIR_VALUE = re.compile(
    r"[\"']?\s*[=:]\s*[\"']?(?!(?:basic|bearer|token|digest)\s|\*{3})(?P<value>(?=[^\s\"'&,;)}\]<>\\]*[A-Za-z])[^\s\"'&,;)}\]<>\\]{8,})",
    re.IGNORECASE,
)
#: OpenAI-style keys (``sk-``, ``sk-proj-``), whoever quotes them.
_KEY_SHAPE = re.compile(r"sk-[A-Za-z0-9_-]{16,}")


def read_api_key(*names: str) -> str | None:
    """The value of the first of the environment variables ``names`` that is set and non-empty, or ``None``.

    The value is remembered, so that :func:`mask_secrets` hides it in every later text of this process.
    """
    for name in names:
        value = os.environ.get(name)
        if value:
            remember_secret(value)
            return value
    return None


def remember_secret(value: str) -> None:
    """Mask ``value`` from now on (in this process); shorter than 4 characters: ignored."""
    if len(value) >= _MIN_LENGTH:
        with _lock:
            _known.add(value)


def remember_url(url: str | None) -> None:
    """Remember the secrets of an endpoint URL: its password, its secret query values, their ``Basic`` credential."""
    if not url:
        return
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        remember_secret(password)
        remember_secret(unquote(password))
        credential = f"{unquote(username or '')}:{unquote(password)}".encode()
        remember_secret(base64.b64encode(credential).decode("ascii"))
    elif username:
        remember_secret(username)  # ``https://TOKEN@host``
    for match in _QUERY.finditer(url):
        remember_secret(match.group("value"))
        remember_secret(unquote(match.group("value")))


def remember_options(options: Mapping[str, Any]) -> None:
    """Remember the secrets of an adapter's options: values of options named like secrets, and those of URLs."""
    for name, value in options.items():
        if looks_secret(name) and value is not None and not isinstance(value, bool):
            for text in _strings(value):
                remember_secret(text)
        for text in _strings(value):
            if "://" in text:
                remember_url(text)


def remember_arguments(words: Sequence[str]) -> None:
    """Remember the secrets of a command line: the values of flags named like secrets and the secrets of URLs in it.

    ``--api-key=X``, ``--password X``, ``-token X`` (the next word when the flag has no ``=``).
    """
    for index, word in enumerate(words):
        if "://" in word:
            remember_url(word.partition("=")[2] if word.startswith("-") and "=" in word else word)
        if not word.startswith("-"):
            continue
        name, sep, value = word.lstrip("-").partition("=")
        if not looks_secret(name):
            continue
        if sep:
            remember_secret(value)
        elif index + 1 < len(words) and not words[index + 1].startswith("-"):
            remember_secret(words[index + 1])


def masked_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Adapter options as reports record them: options named like secrets are :data:`MASK`, the rest :func:`mask_data`."""
    return {name: MASK if looks_secret(name) and value is not None else mask_data(value) for name, value in options.items()}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return [str(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


def looks_secret(name: str) -> bool:
    """Whether an option or field named ``name`` holds a secret (``api_key``, ``token``, ``db_password``, ``key``, ...)."""
    return _SECRET_NAME.search(name) is not None


def holds_known_secret(text: str) -> bool:
    """Whether ``text`` holds one of the keys known now (read, remembered, or in :data:`KNOWN_KEY_ENVS`) verbatim."""
    return any(key in text for key in _known_keys())


def mask_secrets(text: str) -> str:
    """``text`` with every secret :data:`MASK`-ed: the known keys, and whatever looks like a secret (see the module)."""
    return _mask(text, _known_keys())


def _known_keys() -> list[str]:
    """The keys known now, longest first (a key that contains another is masked whole)."""
    with _lock:
        known = set(_known)
    known.update(value for name in KNOWN_KEY_ENVS if len(value := os.environ.get(name, "")) >= _MIN_LENGTH)
    return sorted(known, key=len, reverse=True)


def _mask(text: str, known: list[str]) -> str:
    for key in known:
        if key in text:
            text = text.replace(key, MASK)
    # Each pattern runs only where its anchor occurs: most texts (a dataset's episodes) have none of them.
    if "://" in text:
        text = _USERINFO.sub(f"{MASK}@", text)
    lowered = text.lower()
    if "=" in text and any(word in lowered for word in _QUERY_ANCHORS):
        text = _QUERY.sub(_masked, text)
    if "authorization" in lowered:
        text = _HEADER.sub(_masked, text)
    if "Bearer " in text or "Basic " in text:
        text = _SCHEME.sub(_masked, text)
    if "key" in lowered or "secret" in lowered or "token" in lowered or "passw" in lowered:
        text = _mask_pairs(text, lowered)
    if "sk-" not in text:
        return text
    return _KEY_SHAPE.sub(_masked_key, text)


def _mask_pairs(text: str, lowered: str) -> str:
    """``api_key=VALUE`` and the like: found from their anchor words (a regular expression over every position is slow)."""
    if len(lowered) != len(text):  # a few characters lower-case to two: positions would not match
        lowered = text.lower() if text.isascii() else "".join(c.lower()[:1] for c in text)
    spans: set[tuple[int, int]] = set()
    for anchor in _KEY_ANCHORS:
        at = lowered.find(anchor)
        while at != -1:
            name_end = at + len(anchor)
            separator = lowered[name_end : name_end + 3].lstrip("\"' ")[:1]
            named = separator in ("=", ":") and _PAIR_NAME.search(lowered, max(0, name_end - 16), name_end)
            if named and (found := _PAIR_VALUE.match(text, name_end)):
                spans.add(found.span("value"))
            at = lowered.find(anchor, name_end)
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + MASK + text[end:]
    return text


def _masked_key(match: re.Match[str]) -> str:
    before = match.string[match.start() - 1] if match.start() else " "
    return match.group() if before.isalnum() or before in "-_" else MASK  # ``task-...`` is no key


def _masked(match: re.Match[str]) -> str:
    return match.group("head") + MASK


#: The name it had before every secret, not only keys, was masked.
mask_keys = mask_secrets


def mask_data(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, numbers) with :func:`mask_secrets` applied to every string in it."""
    return _mask_value(value, _known_keys())


def _mask_value(value: Any, known: list[str]) -> Any:
    if isinstance(value, str):
        return _mask(value, known)
    if isinstance(value, dict):
        return {key: _mask_value(item, known) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_value(item, known) for item in value]
    return value
