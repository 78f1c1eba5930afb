"""The LLM request cache: one SQLite file for every LLM request of a run (agent, judge, baseline, adapters).

Entries are keyed on the full request (base URL, model, messages, tools and every
parameter), so an unchanged memory system replays for free and byte-for-byte. The
file is safe to share between processes (pytest-xdist workers): WAL journal, a busy
timeout, and one short transaction per write. Every entry carries a checksum over its
key, request and response; an entry that fails it is ignored with a warning and, in
``record`` mode, overwritten by a fresh response.

Requests never hold credentials: the API key travels in an HTTP header the cache never sees, the
endpoint enters keys with its user-info and key parameters masked, and the client masks every
secret in a request and its response before they are stored (:mod:`pytest_lens.llm.api_keys`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_lens.llm.errors import LLMCacheError, LLMCacheMiss
from pytest_lens.llm.settings import CacheMode

__all__ = [
    "SCHEMA_VERSION",
    "CachedEntry",
    "LLMCacheError",
    "LLMCacheMiss",
    "LLMCacheWarning",
    "RequestCache",
    "canonical_json",
    "request_key",
    "use_wal",
]

SCHEMA_VERSION = 1
TABLE = "llm_responses"
#: How long a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class CachedEntry:
    """One stored request and its reply, as ``lens bundle`` carries it."""

    key: str
    purpose: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any]


class LLMCacheWarning(UserWarning):
    """A cache entry was unusable (corrupted or mis-keyed) and was ignored."""


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def use_wal(connection: sqlite3.Connection, timeout_s: float) -> None:
    """Put the database in WAL mode, waiting up to ``timeout_s`` while other processes open it at the same moment.

    SQLite answers "database is locked" to a change of journal mode at once, without its busy handler, while another
    connection is opening the file (several xdist workers starting on one fresh cache): that is retried here.
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.01
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def request_key(request: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical request (it must include the base URL and the model)."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def _checksum(key: str, request_text: str, response_text: str) -> str:
    return hashlib.sha256("\x1f".join((key, request_text, response_text)).encode("utf-8")).hexdigest()


class RequestCache:
    """Request -> response store with ``record`` / ``replay`` / ``off`` modes.

    ``get`` returns a cached response or ``None`` (and raises :class:`LLMCacheMiss`
    in replay mode); ``put`` stores one (record mode only). The database is opened on
    first use, so constructing a cache costs nothing.
    """

    def __init__(self, path: Path, mode: CacheMode) -> None:
        self.path = path
        self.mode = mode
        self.corrupted = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"RequestCache(path={str(self.path)!r}, mode={self.mode!r})"

    # -- lifecycle ---------------------------------------------------------------------------
    def check(self) -> None:
        """Open the cache now; :class:`LLMCacheError` when it is unusable (not SQLite, missing in replay mode)."""
        if self.mode != "off":
            with self._lock:
                self._database()

    def close(self) -> None:
        """Close the database connection (it reopens on next use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _database(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        if self.mode == "replay" and not self.path.is_file():
            raise LLMCacheError(
                f"--lens-llm-cache-mode=replay: no LLM cache at {self.path}; record one first with --lens-llm-cache-mode=record"
            )
        # Switching to WAL and creating the table take locks SQLite may refuse at once (no busy wait)
        # while another process does the same; retry those for as long as the busy timeout.
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            connection: sqlite3.Connection | None = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
                self._db = self._initialise(connection)
                return self._db
            except LLMCacheError:
                if connection is not None:
                    connection.close()
                raise
            except sqlite3.OperationalError as exc:
                if connection is not None:
                    connection.close()
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise LLMCacheError(f"LLM cache {self.path} cannot be opened: {exc}") from None
                time.sleep(0.02)
            except sqlite3.DatabaseError as exc:
                if connection is not None:
                    connection.close()
                raise LLMCacheError(
                    f"LLM cache {self.path} is not a usable SQLite database ({exc}); delete it or choose another --lens-llm-cache"
                ) from None

    def _initialise(self, connection: sqlite3.Connection) -> sqlite3.Connection:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LLMCacheError(
                f"LLM cache {self.path} was written by a newer pytest-lens (schema {version}); use another --lens-llm-cache"
            )
        if self.mode == "replay":
            if connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [TABLE]).fetchone() is None:
                raise LLMCacheError(f"--lens-llm-cache-mode=replay: {self.path} holds no LLM responses; record them first")
            return connection
        use_wal(connection, BUSY_TIMEOUT_MS / 1000)
        # In WAL mode NORMAL never corrupts the file; a power cut may only lose the newest entries (a cache can afford it).
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS [{TABLE}] ([key] TEXT PRIMARY KEY, [purpose] TEXT, [model] TEXT, "
                "[request] TEXT NOT NULL, [response] TEXT NOT NULL, [checksum] TEXT NOT NULL, [created] TEXT NOT NULL)"
            )
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            connection.rollback()
            raise
        connection.commit()
        return connection

    # -- entries -------------------------------------------------------------------------------
    def get(self, key: str, request: Mapping[str, Any], describe: str) -> dict[str, Any] | None:
        """The cached response for ``request`` (keyed ``key``), or ``None`` in record mode when absent.

        Corrupted entries are ignored with an :class:`LLMCacheWarning`. In replay mode a miss
        raises :class:`LLMCacheMiss` whose message includes ``describe`` (what the request was for).
        """
        if self.mode == "off":
            return None
        try:
            with self._lock:
                row = self._database().execute(f"SELECT request, response, checksum FROM {TABLE} WHERE key = ?", [key]).fetchone()
        except sqlite3.Error as exc:
            raise LLMCacheError(f"LLM cache {self.path} cannot be read: {exc}") from None
        response = self._validated(key, row) if row is not None else None
        if response is None and self.mode == "replay":
            reason = "its cached entry is corrupted" if row is not None else "it is not in the cache"
            raise LLMCacheMiss(
                f"--lens-llm-cache-mode=replay: {describe} (request {key[:16]}) cannot be replayed: {reason} ({self.path}); "
                "rerun with --lens-llm-cache-mode=record"
            )
        return response

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any], *, purpose: str) -> None:
        """Store a response (record mode); a concurrent writer of the same key is harmless."""
        if self.mode != "record":
            return
        request_text = canonical_json(request)
        response_text = canonical_json(response)
        row = {
            "key": key,
            "purpose": purpose,
            "model": str(request.get("model", "")),
            "request": request_text,
            "response": response_text,
            "checksum": _checksum(key, request_text, response_text),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        columns = ", ".join(row)
        placeholders = ", ".join("?" for _ in row)
        with self._lock:
            connection = self._database()
            try:
                # IMMEDIATE takes the write lock up front, so the busy timeout (not an error) handles other writers.
                connection.execute("BEGIN IMMEDIATE")
                try:
                    connection.execute(f"INSERT OR REPLACE INTO {TABLE} ({columns}) VALUES ({placeholders})", list(row.values()))
                except BaseException:
                    connection.rollback()
                    raise
                connection.commit()
            except sqlite3.Error as exc:
                # The response is still good for this run; only the next run loses it.
                warnings.warn(LLMCacheWarning(f"LLM cache {self.path}: could not store {key[:16]} ({exc})"), stacklevel=3)

    def entries(self, keys: Iterable[str]) -> Iterator[CachedEntry]:
        """The stored entries of ``keys`` that are whole (checksum, key and reply checked as :meth:`get` checks them).

        A key with no entry, or a corrupted one, is left out; the caller compares what it asked for with what came.
        """
        wanted = sorted(set(keys))
        for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            try:
                with self._lock:
                    rows = self._database().execute(
                        f"SELECT key, purpose, model, request, response, checksum FROM {TABLE} WHERE key IN ({marks})", chunk
                    ).fetchall()
            except sqlite3.Error as exc:
                raise LLMCacheError(f"LLM cache {self.path} cannot be read: {exc}") from None
            for key, purpose, model, request_text, response_text, checksum in sorted(rows):
                response = self._validated(key, (request_text, response_text, checksum))
                if response is not None:
                    yield CachedEntry(key, str(purpose or ""), str(model or ""), json.loads(request_text), response)

    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        with self._lock:
            return int(self._database().execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    def _validated(self, key: str, row: tuple[Any, ...]) -> dict[str, Any] | None:
        request_text, response_text, checksum = row
        problem = None
        if not isinstance(request_text, str) or not isinstance(response_text, str):
            problem = "stored values are not text"
        elif checksum != _checksum(key, request_text, response_text):
            problem = "checksum mismatch"
        else:
            try:
                request = json.loads(request_text)
                response = json.loads(response_text)
            except json.JSONDecodeError as exc:
                problem = f"invalid JSON ({exc.msg})"
            else:
                if request_key(request) != key:
                    problem = "entry is stored under the wrong key"
                elif not isinstance(response, dict) or not isinstance(response.get("choices"), list):
                    problem = "response is not a chat completion"
                else:
                    return response
        with self._lock:  # questions answered concurrently may both find corrupted entries
            self.corrupted += 1
        warnings.warn(
            LLMCacheWarning(f"LLM cache {self.path}: ignoring corrupted entry {key[:16]} ({problem})"),
            stacklevel=4,
        )
        return None
