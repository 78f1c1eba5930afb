"""BM25 over full episodes with SQLite FTS5: the keyword half of the paper's winning hybrid."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from lens_fixtures.adapters.fusion import reciprocal_rank_fusion
from lens_fixtures.adapters.storage import create_episodes, scratch_database, store_episode, stored_document
from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.text import content_terms

__all__ = ["BATCH_RETRIEVE", "BM25Adapter", "BM25Hit", "fts_query"]


class BM25Hit(NamedTuple):
    """One episode ranked by :meth:`BM25Adapter.rank` (``score`` is higher-is-better)."""

    ref_id: str
    timestamp: str
    score: float
    snippet: str
    rowid: int


def date_conditions(filters: dict[str, Any] | None, column: str) -> tuple[list[str], list[str]]:
    """SQL conditions on ``column`` (an ISO timestamp) for the date range of ``filters``, and their parameters.

    An end date covers its whole day.
    """
    where, params = [], []
    start, end = (filters or {}).get("start_date"), (filters or {}).get("end_date")
    if start:
        where.append(f"{column} >= ?")
        params.append(str(start))
    if end:
        where.append(f"{column} <= ?")
        params.append(str(end) + "\uffff")
    return where, params


def fts_query(text: str) -> str | None:
    """An FTS5 query OR-ing the quoted content words of ``text`` (``None`` when there are none).

    Quoting every term keeps user text from being read as FTS5 syntax (``AND``, ``-``, ``:``, ``*``).
    """
    terms = content_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class BM25Adapter(MemoryAdapter):
    """Episodes in an FTS5 table (porter stemming), ranked by SQLite's ``bm25()``.

    Search returns a short snippet around the matched terms, so a search costs the
    agent little budget; ``memory_retrieve`` and ``batch_retrieve`` return the stored
    text verbatim.
    """

    #: File name prefix of the database under ``storage_dir`` (subclasses name their own).
    database_prefix = "bm25"
    #: Each instance has its own database file: concurrent runs may stream several to different checkpoints.
    lens_isolated_instances = True

    def __init__(self, storage_dir: str | None = None, snippet_tokens: int = 48, max_results: int = 20) -> None:
        self._db = scratch_database(storage_dir, self.database_prefix)
        self._snippet_tokens = snippet_tokens
        self._max_results = max_results
        self._create()

    def _create(self) -> None:
        self._db.execute("DROP TABLE IF EXISTS episodes_fts")
        create_episodes(self._db)
        self._db.execute("CREATE VIRTUAL TABLE episodes_fts USING fts5(text, content='episodes', tokenize='porter unicode61')")

    def reset(self, scope_id: str) -> None:
        """Drop every stored episode (one scope is live at a time)."""
        self._create()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the episode and index its text."""
        with self._db:
            old = self._db.execute("SELECT rowid, text FROM episodes WHERE ref_id = ?", [episode_id]).fetchone()
            if old is not None:  # re-ingesting an id replaces it; drop the stale index entry first
                self._db.execute("INSERT INTO episodes_fts(episodes_fts, rowid, text) VALUES ('delete', ?, ?)", list(old))
            rowid = store_episode(self._db, episode_id, scope_id, timestamp, text, meta)
            self._db.execute("INSERT INTO episodes_fts(rowid, text) VALUES (?, ?)", [rowid, text])

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Best BM25 matches first; ``filters`` may bound the timestamp with ``start_date``/``end_date``."""
        limit = max(1, min(limit or 10, self._max_results))
        return [
            SearchResult(ref_id=hit.ref_id, text=hit.snippet, score=hit.score, metadata={"timestamp": hit.timestamp})
            for hit in self.rank(query, filters, limit)
        ]

    def within_dates(self, refs: Iterable[str], filters: dict[str, Any] | None) -> set[str]:
        """Those of ``refs`` that are stored episodes inside the ``start_date``/``end_date`` bounds of ``filters``."""
        refs = list(refs)
        if not refs:
            return set()
        dated, bounds = date_conditions(filters, "timestamp")
        where, params = [f"ref_id IN ({','.join('?' * len(refs))})", *dated], [*refs, *bounds]
        return {ref for (ref,) in self._db.execute(f"SELECT ref_id FROM episodes WHERE {' AND '.join(where)}", params)}

    def fused(self, lexical: list[BM25Hit], other: list[str], reasons: dict[str, str], limit: int) -> list[SearchResult]:
        """The BM25 ranking and ``other`` fused by reciprocal rank (k=60), best ``limit`` first, ties by ref.

        Each result shows why ``other`` found it (``reasons``) above its BM25 snippet, whichever it has.
        """
        fusion = reciprocal_rank_fusion({"bm25": [hit.ref_id for hit in lexical], "other": other})
        scores = {item.key: item.score for item in fusion}
        snippets = {hit.ref_id: hit.snippet for hit in lexical}
        results = []
        for ref in sorted(scores, key=lambda ref: (-scores[ref], ref))[:limit]:
            document = self.retrieve(ref)
            stamp = document.metadata.get("timestamp") if document else None
            text = "\n".join(part for part in (reasons.get(ref, ""), snippets.get(ref, "")) if part)
            results.append(SearchResult(ref_id=ref, text=text, score=round(scores[ref], 6), metadata={"timestamp": stamp}))
        return results

    def rank(self, query: str, filters: dict[str, Any] | None, limit: int | None, *, snippets: bool = True) -> list[BM25Hit]:
        """The ``limit`` best episodes by BM25 (every matching episode with ``None``), for hybrids that fuse this ranking.

        Ranks first, then reads ids, timestamps and (unless ``snippets=False``) snippets for those rows
        only: with thousands of matching episodes that is several times faster than one joined query.
        """
        match = fts_query(query)
        if match is None:
            return []
        dated, bounds = date_conditions(filters, "e.timestamp")
        if dated:
            where, params = ["episodes_fts MATCH ?", *dated], [match, *bounds]
            ranked = self._db.execute(
                f"""SELECT episodes_fts.rowid, bm25(episodes_fts) AS score FROM episodes_fts
                    JOIN episodes e ON e.rowid = episodes_fts.rowid
                    WHERE {" AND ".join(where)} ORDER BY score, episodes_fts.rowid LIMIT ?""",
                [*params, -1 if limit is None else limit],
            ).fetchall()
        else:
            ranked = self._db.execute(
                "SELECT rowid, bm25(episodes_fts) AS score FROM episodes_fts WHERE episodes_fts MATCH ? ORDER BY score, rowid LIMIT ?",
                [match, -1 if limit is None else limit],  # SQLite: a negative LIMIT is none
            ).fetchall()
        if not ranked:
            return []
        rowids = [rowid for rowid, _ in ranked]
        marks = ",".join("?" * len(rowids))
        meta = {
            rowid: (ref, ts)
            for rowid, ref, ts in self._db.execute(f"SELECT rowid, ref_id, timestamp FROM episodes WHERE rowid IN ({marks})", rowids)
        }
        found = {}
        if snippets:
            found = dict(
                self._db.execute(
                    f"""SELECT rowid, snippet(episodes_fts, 0, '', '', ' ... ', ?) FROM episodes_fts
                        WHERE episodes_fts MATCH ? AND rowid IN ({marks})""",
                    [self._snippet_tokens, match, *rowids],
                ).fetchall()
            )
        # SQLite's bm25() is lower-is-better; flip the sign so scores sort descending.
        return [BM25Hit(meta[rowid][0], meta[rowid][1], -score, found.get(rowid, ""), rowid) for rowid, score in ranked]

    def keyword_snippets(self, query: str, hits: list[BM25Hit]) -> dict[str, str]:
        """FTS5 snippets of ``query`` in the episodes of ``hits`` (from :meth:`rank` with ``snippets=False``)."""
        match = fts_query(query)
        if match is None:
            return {}
        snippets = {}
        for hit in hits:
            # One row at a time by rowid: FTS5 answers "MATCH ? AND rowid = ?" without scanning every match.
            row = self._db.execute(
                "SELECT snippet(episodes_fts, 0, '', '', ' ... ', ?) FROM episodes_fts WHERE episodes_fts MATCH ? AND rowid = ?",
                [self._snippet_tokens, match, hit.rowid],
            ).fetchone()
            if row is not None:
                snippets[hit.ref_id] = row[0]
        return snippets

    def retrieve(self, ref_id: str) -> Document | None:
        """The stored episode text, verbatim."""
        return stored_document(self._db, ref_id)

    def get_capabilities(self) -> CapabilityManifest:
        """Keyword search, a date range and ``batch_retrieve``."""
        return CapabilityManifest(
            search_modes=["keyword"],
            max_results_per_search=self._max_results,
            supports_date_range=True,
            extra_tools=[BATCH_RETRIEVE],
        )

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``: ``{"documents": [{ref_id, text}], "count": n}`` for the ids found; invalid arguments raise."""
        if name != BATCH_RETRIEVE.name:
            return super().call_extended_tool(name, args)
        return batch_payload(batch_ref_ids(args), self.retrieve)

    def close(self) -> None:
        """Close the database."""
        self._db.close()
