"""The reference adapters' SQLite files: scratch storage, tuned for speed rather than durability.

Plain :mod:`sqlite3`: the adapters need a few tables and statements, and nothing here should cost a
run's start-up more than the standard library does.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from pytest_lens import Document

__all__ = ["create_episodes", "scratch_database", "store_episode", "stored_document"]


def scratch_database(storage_dir: str | None, prefix: str) -> sqlite3.Connection:
    """A new database file ``{prefix}-{random}.db`` under ``storage_dir`` (in memory without one).

    The runner deletes ``storage_dir`` at the end of the session, so nothing here must survive a
    crash: no fsync and an in-memory journal let each ingest commit without waiting for the disk.
    The connection may be used from a helper thread (hybrids run their keyword leg there while
    the vector leg runs); SQLite serialises access to it.
    """
    path = str(Path(storage_dir) / f"{prefix}-{uuid.uuid4().hex[:8]}.db") if storage_dir else ":memory:"
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA journal_mode = MEMORY")
    return db


def create_episodes(db: sqlite3.Connection) -> None:
    """A new, empty ``episodes`` table (one row per episode, text verbatim), replacing any before it."""
    db.execute("DROP TABLE IF EXISTS [episodes]")
    db.execute("CREATE TABLE [episodes] ([ref_id] TEXT PRIMARY KEY, [scope_id] TEXT, [timestamp] TEXT, [text] TEXT, [meta] TEXT)")


def store_episode(db: sqlite3.Connection, ref_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None) -> int:
    """Store an episode in ``episodes`` (a new row replacing one with the same id); its rowid."""
    cursor = db.execute(
        "INSERT OR REPLACE INTO [episodes] ([ref_id], [scope_id], [timestamp], [text], [meta]) VALUES (?, ?, ?, ?, ?)",
        [ref_id, scope_id, timestamp, text, json.dumps(meta or {})],
    )
    rowid = cursor.lastrowid
    assert rowid is not None
    return rowid


def stored_document(db: sqlite3.Connection, ref_id: str) -> Document | None:
    """An episode from the reference adapters' ``episodes`` table, text verbatim."""
    row = db.execute("SELECT text, timestamp FROM episodes WHERE ref_id = ?", [ref_id]).fetchone()
    return Document(ref_id=ref_id, text=row[0], metadata={"timestamp": row[1]}) if row else None
