"""The reference adapters' SQLite files: scratch storage, tuned for speed rather than durability."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import sqlite_utils

from pytest_lens import Document

__all__ = ["scratch_database", "stored_document"]


def scratch_database(storage_dir: str | None, prefix: str) -> sqlite_utils.Database:
    """A new database file ``{prefix}-{random}.db`` under ``storage_dir`` (in memory without one).

    The runner deletes ``storage_dir`` at the end of the session, so nothing here must survive a
    crash: no fsync and an in-memory journal let each ingest commit without waiting for the disk.
    The connection may be used from a helper thread (hybrids run their keyword leg there while
    the vector leg runs); SQLite serialises access to it.
    """
    path = str(Path(storage_dir) / f"{prefix}-{uuid.uuid4().hex[:8]}.db") if storage_dir else ":memory:"
    db = sqlite_utils.Database(sqlite3.connect(path, check_same_thread=False))
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA journal_mode = MEMORY")
    return db


def stored_document(db: sqlite_utils.Database, ref_id: str) -> Document | None:
    """An episode from the reference adapters' ``episodes`` table, text verbatim."""
    row = db.execute("SELECT text, timestamp FROM episodes WHERE ref_id = ?", [ref_id]).fetchone()
    return Document(ref_id=ref_id, text=row[0], metadata={"timestamp": row[1]}) if row else None
