"""Hierarchical summaries (``hierarchical``): the LENS reference's hierarchical-summarization design, re-implemented.

The episodes are stored verbatim and indexed for BM25 (FTS5) at ``ingest``, with no model call. ``prepare()`` is the
barrier where the model writes three levels of summaries over the episodes ingested so far:

1. one summary per episode, written once;
2. one summary per *period*: ``group_size`` consecutive episodes (4 by default), rewritten from its episodes'
   summaries whenever the period gains an episode;
3. one overview of the whole stream, rewritten from the period summaries whenever one of them changes.

Each level is written only from the one below it, and a period's summary only from its own episodes, so the memory at
checkpoint N depends on the first N episodes alone, whichever checkpoints were prepared before (stepwise and
one-shot preparation give the same summaries; a test checks it).

Search reads the summaries first, as the reference's design does (``search="memory"``, the default): BM25 over the
episode and period summaries, each summary leading to the episodes it covers and shown as the result's text; the agent
reaches an episode's own text through them (``memory_retrieve``). Summaries the model left empty find nothing.
``search="fused"`` fuses, by reciprocal rank (k=60), that ranking with BM25 over the raw episodes. The extra tool
``memory_overview`` returns the overview and every period's summary with its episodes, so an agent can read the
hierarchy top down and drill into the episodes it names.

Unlike the reference (whose model calls return an empty summary on any error), a reply with no text is a
:class:`SummaryReplyError` naming the episode or period: an adapter fault, never a silently empty memory.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from lens_fixtures.adapters.bm25 import BM25Adapter, fts_query
from lens_fixtures.adapters.model_required import require_llm
from lens_fixtures.adapters.search_modes import FUSED, search_mode
from pytest_lens import CapabilityManifest, ExtraTool, SearchResult

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["EPISODE_PROMPT", "OVERVIEW_PROMPT", "PERIOD_PROMPT", "HierarchicalAdapter", "SummaryReplyError"]

EPISODE_PROMPT = (
    "You keep the memory of a stream of operational records. Summarise the record you are given in at most 120 "
    "words. Keep every name, identifier, number with its unit, date and action, and say what changed. Report facts "
    "only. Reply with the summary only."
)
PERIOD_PROMPT = (
    "You keep the memory of a stream of operational records. You are given the summaries of consecutive records, "
    "each with its date. Summarise the period in at most 200 words: what held steady, what changed, and any trend, "
    "each with its dates and values. Keep names, identifiers and numbers. Reply with the summary only."
)
OVERVIEW_PROMPT = (
    "You keep the memory of a stream of operational records. You are given the summaries of its periods in order. "
    "Write an overview of the whole stream in at most 300 words: the main threads, how each developed over time "
    "with dates and values, and anything anomalous. Reply with the overview only."
)
PROMPTS = (EPISODE_PROMPT, PERIOD_PROMPT, OVERVIEW_PROMPT)

MEMORY_OVERVIEW = ExtraTool(
    name="memory_overview",
    description=(
        "The memory's overview of every record so far, and a summary of each period (a few consecutive records) with "
        "the ids of the records it covers. Read it to see the whole stream at once; retrieve the records it names."
    ),
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
)


class SummaryReplyError(ValueError):
    """The model wrote no summary."""


class HierarchicalAdapter(BM25Adapter):
    """Episodes in FTS5, and episode, period and overview summaries the run's model writes at ``prepare``.

    Options: ``model`` (the summarising model; the run's by default), ``summary_max_tokens`` (512),
    ``group_size`` (4 episodes per period), ``overview_input_chars`` (12,000: longer period summaries are summarised
    in groups before the overview), ``search`` (``memory``: the summaries, each leading to its episodes; ``fused``: fused
    with BM25 over the raw episodes), ``snippet_tokens`` and ``max_results`` as for ``bm25``.
    """

    database_prefix = "hierarchical"
    lens_isolated_instances = True
    lens_model_built = True

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        summary_max_tokens: int = 512,
        group_size: int = 4,
        overview_input_chars: int = 12000,
        search: str = "memory",
        snippet_tokens: int = 48,
        max_results: int = 20,
    ) -> None:
        lens_llm = require_llm(lens_llm, "hierarchical needs an LLM to write its summaries")
        if group_size < 2:
            raise ValueError(f"group_size must be 2 or more, got {group_size}")
        self._llm = (lens_llm.with_model(model) if model else lens_llm).with_max_tokens(summary_max_tokens)
        self._group_size = group_size
        self._overview_input_chars = overview_input_chars
        self._search = search_mode(search, "hierarchical")
        self._stats = {"summary_calls": 0, "summary_prompt_tokens": 0, "summary_completion_tokens": 0, "summaries_cut_off": 0}
        super().__init__(storage_dir, snippet_tokens=snippet_tokens, max_results=max_results)

    def _create(self) -> None:
        super()._create()
        for table in ("summaries", "summaries_fts"):
            self._db.execute(f"DROP TABLE IF EXISTS {table}")
        # key: the episode's ref, "period-N" or "overview"; refs: the episodes it covers (JSON list).
        self._db.execute("CREATE TABLE summaries (key TEXT PRIMARY KEY, level INTEGER, text TEXT, refs TEXT)")
        self._db.execute("CREATE VIRTUAL TABLE summaries_fts USING fts5(key UNINDEXED, text, tokenize='porter unicode61')")

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store and index the episode; a re-ingested id loses its summary (and its period's) until the next ``prepare``."""
        stale = [key for key, refs in self._db.execute("SELECT key, refs FROM summaries") if episode_id in json.loads(refs)]
        with self._db:
            for key in stale:
                self._db.execute("DELETE FROM summaries WHERE key = ?", [key])
                self._db.execute("DELETE FROM summaries_fts WHERE key = ?", [key])
        super().ingest(episode_id, scope_id, timestamp, text, meta)

    # -- prepare: the three levels ---------------------------------------------------------------

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Summarise each new episode, then each period that changed, then the overview if any period did."""
        episodes = self._db.execute("SELECT ref_id, timestamp, text FROM episodes ORDER BY rowid").fetchall()
        written = {key: (text, json.loads(refs)) for key, text, refs in self._db.execute("SELECT key, text, refs FROM summaries")}
        for ref_id, timestamp, text in episodes:
            if ref_id not in written:
                summary = self._summarise(EPISODE_PROMPT, f"Record ({timestamp}):\n{text.strip()}", f"episode {ref_id!r}")
                written[ref_id] = (summary, [ref_id])
                self._store(ref_id, 1, summary, [ref_id])
        changed = False
        stamps = {ref_id: timestamp for ref_id, timestamp, _ in episodes}
        for start in range(0, len(episodes), self._group_size):
            members = [ref_id for ref_id, _, _ in episodes[start : start + self._group_size]]
            key = f"period-{start // self._group_size + 1}"
            if key in written and written[key][1] == members:
                continue
            lines = "\n\n".join(f"({stamps[ref]}) {written[ref][0]}" for ref in members)
            first, last = stamps[members[0]][:10], stamps[members[-1]][:10]
            summary = self._summarise(PERIOD_PROMPT, f"Records from {first} to {last}:\n\n{lines}", f"the period of {members}")
            written[key] = (summary, members)
            self._store(key, 2, summary, members)
            changed = True
        if changed or ("overview" not in written and episodes):
            periods = sorted((key for key in written if key.startswith("period-")), key=lambda key: int(key.split("-")[1]))
            blocks = [
                f"Period {stamps[written[key][1][0]][:10]} to {stamps[written[key][1][-1]][:10]}:\n{written[key][0]}" for key in periods
            ]
            overview = self._summarise(OVERVIEW_PROMPT, "\n\n".join(self._fitted(blocks)), "the overview")
            self._store("overview", 3, overview, [ref for ref, _, _ in episodes])

    def _fitted(self, blocks: list[str]) -> list[str]:
        """Period summaries short enough for one overview request (``overview_input_chars``).

        While they are longer, each ``group_size`` consecutive ones are summarised together, as a period is from its
        episodes. A long stream's period summaries would otherwise outgrow the model's context (30 periods of 512 tokens is
        15k). Each summary of summaries depends only on the blocks it reads, so the memory stays the same however
        the checkpoints were prepared; a request that repeats one is answered from the run's request cache.
        """
        while len(blocks) > 1 and sum(len(block) for block in blocks) > self._overview_input_chars:
            merged = []
            for start in range(0, len(blocks), self._group_size):
                group = blocks[start : start + self._group_size]
                if len(group) == 1:
                    merged.append(group[0])
                    continue
                first, last = group[0].split(":", 1)[0], group[-1].split(":", 1)[0]
                text = self._summarise(PERIOD_PROMPT, "\n\n".join(group), f"the periods {first} .. {last}")
                merged.append(f"{first.split(' to ')[0]} to {last.split(' to ')[-1]}:\n{text}")
            if len(merged) == len(blocks):
                break
            blocks = merged
        return blocks

    def _summarise(self, system: str, user: str, what: str) -> str:
        # Records are shown by timestamp only: ids may encode dataset labels.
        reply = self._llm.complete([{"role": "system", "content": system}, {"role": "user", "content": user}], purpose="hierarchical")
        self._stats["summary_calls"] += 1
        if reply.usage is not None:
            self._stats["summary_prompt_tokens"] += reply.usage.prompt_tokens
            self._stats["summary_completion_tokens"] += reply.usage.completion_tokens
        if reply.finish_reason == "length":
            self._stats["summaries_cut_off"] += 1  # kept: a summary cut off at the cap still says what it says
        text = reply.content.strip()
        if not text:
            raise SummaryReplyError(f"hierarchical got no summary of {what} from the model (an empty reply)")
        return text

    def _store(self, key: str, level: int, text: str, refs: list[str]) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?, ?, ?)", [key, level, text, json.dumps(refs)])
            self._db.execute("DELETE FROM summaries_fts WHERE key = ?", [key])
            if level < 3:  # the overview covers everything: it is read through memory_overview, not ranked
                self._db.execute("INSERT INTO summaries_fts (key, text) VALUES (?, ?)", [key, text])

    # -- search ------------------------------------------------------------------------------------

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The episodes the best-matching summaries cover, each shown with its summary (``fused``: with BM25 over the episodes)."""
        limit = max(1, min(limit or 10, self._max_results))
        through: list[str] = []
        why: dict[str, str] = {}
        for key, text, refs in self._summary_hits(query, limit * 2):
            for ref in json.loads(refs):
                if ref not in why:
                    through.append(ref)
                    why[ref] = f"[{'period' if key.startswith('period-') else 'summary'}] {text[:300]}"
        if (filters or {}).get("start_date") or (filters or {}).get("end_date"):
            allowed = self.within_dates(through, filters)
            through = [ref for ref in through if ref in allowed]
        lexical = self.rank(query, filters, limit * 2) if self._search == FUSED else []
        return self.fused(lexical, through, why, limit)

    def _summary_hits(self, query: str, limit: int) -> list[tuple[str, str, str]]:
        match = fts_query(query)
        if match is None:
            return []
        return self._db.execute(
            """SELECT s.key, s.text, s.refs FROM summaries_fts JOIN summaries s ON s.key = summaries_fts.key
               WHERE summaries_fts MATCH ? ORDER BY bm25(summaries_fts), s.level, s.key LIMIT ?""",
            [match, limit],
        ).fetchall()

    # -- manifest and tools ------------------------------------------------------------------------

    def get_capabilities(self) -> CapabilityManifest:
        """Summary-fused search (not purely lexical), a date range, ``batch_retrieve`` and ``memory_overview``."""
        return CapabilityManifest(
            search_modes=["hierarchical"],
            max_results_per_search=self._max_results,
            supports_date_range=True,
            extra_tools=[BATCH_RETRIEVE, MEMORY_OVERVIEW],
        )

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``, or ``memory_overview``: ``{"overview", "periods": [{"summary", "ref_ids"}]}``."""
        if name == BATCH_RETRIEVE.name:
            return batch_payload(batch_ref_ids(args), self.retrieve)
        if name != MEMORY_OVERVIEW.name:
            return super().call_extended_tool(name, args)
        if args:
            raise ValueError(f"memory_overview takes no arguments, got {sorted(args)}")
        rows = self._db.execute("SELECT key, level, text, refs FROM summaries WHERE level >= 2").fetchall()
        overview = next((text for key, level, text, _ in rows if level == 3), "")
        periods = sorted((row for row in rows if row[1] == 2), key=lambda row: int(row[0].split("-")[1]))
        return {"overview": overview, "periods": [{"summary": text, "ref_ids": json.loads(refs)} for _, _, text, refs in periods]}

    def lens_stats(self) -> dict[str, int]:
        """Summary calls and tokens (``extraction_*`` too, as the other LLM-built memories name them), cut-off summaries."""
        stats = dict(self._stats)
        stats["extraction_calls"] = stats["summary_calls"]
        stats["extraction_prompt_tokens"] = stats["summary_prompt_tokens"]
        stats["extraction_completion_tokens"] = stats["summary_completion_tokens"]
        return stats
