"""``letta-memorize``: Letta's agent reads each episode and writes what it keeps into its core memory; that is what is read.

The ``letta`` adapter (:mod:`lens_fixtures.adapters.letta_memory`) keeps episodes in Letta's archival memory, embedded,
not extracted. Here each episode is also sent to the scope's agent as a message (one agent turn, through the run's
model): Letta's agent (``memgpt_v2_agent``: ``memory_insert``, ``memory_replace``, ``conversation_search``,
``send_message``) may write it into its core memory blocks. A reply Letta cannot use is an adapter fault on ``ingest``
quoting Letta's error.

What the answering agent reads is that core memory, the way Letta's own agent reads it (``search="memory"``, the default):

- ``context()``: the core memory blocks as Letta renders them in its agent's system prompt (``<memory_blocks>``, each
  block's description, size and numbered lines), cited by the synthetic ref ``core_memory``; none until the model has
  written a line.
- ``search``: the lines the model wrote, ranked by the shared embedder's cosine similarity to the query (no model
  request), each mapped to the episode whose turn wrote it (provenance: the adapter reads the blocks after every turn),
  so citations name episodes. A core memory the model left empty finds nothing.

``search="fused"`` fuses (RRF, k=60) that ranking with Letta's archival search over the raw episodes. The episodes are
in archival memory in both modes, so the agent's prompts (which count and tag its archival memories) and so what the
model writes are the same whichever mode reads them.
"""

from __future__ import annotations

import contextvars
import dataclasses
from typing import Any

from lens_fixtures.adapters.fusion import reciprocal_rank_fusion
from lens_fixtures.adapters.letta_memory import LettaAdapter, LettaError
from lens_fixtures.adapters.search_modes import FUSED, search_mode
from pytest_lens import AdapterUnavailable, CapabilityManifest, ContextBlock, SearchResult

__all__ = ["CORE_MEMORY_REF", "LettaMemorizeAdapter", "render_memory_blocks"]

#: The synthetic ref the answering agent cites the core memory by.
CORE_MEMORY_REF = "core_memory"
#: Letta 0.11's default size of a memory block, in characters (its agent is told ``chars_limit=20000``).
BLOCK_CHARS = 20000
#: Letta's note above a block's numbered lines (memgpt_v2's template).
_LINE_NOTE = (
    "# NOTE: Line numbers shown below are to help during editing. Do NOT include line number prefixes in your memory edit tool calls."
)


def render_memory_blocks(blocks: list[dict[str, Any]]) -> str:
    """Core memory blocks (``label``, ``description``, ``value``, ``limit``) as Letta shows them to its agent, by label."""
    parts = ["<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n"]
    for block in sorted(blocks, key=lambda block: str(block["label"])):
        label, value = str(block["label"]), str(block.get("value") or "")
        lines = "\n".join(f"Line {number}: {line}" for number, line in enumerate(value.split("\n"), start=1))
        parts.append(
            f"<{label}>\n<description>\n{block.get('description') or ''}\n</description>\n<metadata>\n"
            f"- chars_current={len(value)}\n- chars_limit={block.get('limit') or BLOCK_CHARS}\n</metadata>\n"
            f"<value>\n{_LINE_NOTE}\n{lines}\n</value>\n</{label}>\n"
        )
    parts.append("</memory_blocks>")
    return "\n".join(parts)


class LettaMemorizeAdapter(LettaAdapter):
    """Letta's agent writes each episode into its core memory; search and the agent's context read that (module docstring).

    Options: those of ``letta``, and ``search`` (``memory``: the core memory the model wrote; ``fused``: fused with Letta's
    archival search over the raw episodes).
    """

    lens_model_built = True

    def __init__(self, storage_dir: str | None = None, *, lens_llm: Any = None, search: str = "memory", **options: Any) -> None:
        if lens_llm is None:
            raise AdapterUnavailable(
                "letta-memorize needs an LLM: pass --lens-llm-base-url and --lens-agent-model "
                "(or --lens-judge-model); its requests go through the LLM cache like the agent's"
            )
        self._search = search_mode(search, "letta-memorize")
        #: (block label, line) -> the episode whose turn wrote it, for the lines the model wrote and kept.
        self._written: dict[tuple[str, str], str] = {}
        #: Every line of the core memory as last read (the agent's initial persona included).
        self._seen: set[tuple[str, str]] = set()
        super().__init__(storage_dir, lens_llm=lens_llm, **options)

    def reset(self, scope_id: str) -> None:
        """A fresh agent (as ``letta``); nothing written yet."""
        super().reset(scope_id)
        self._written.clear()
        self._seen = self._lines()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Letta's archival insert, then one turn of the agent on the record; the lines it writes are the episode's."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        agent_id = self._agent()
        assert self._relay is not None
        self._relay.now = timestamp
        self._relay.context = contextvars.copy_context()
        try:
            response = self._call(
                f"let its agent read episode {episode_id!r}",
                lambda: self._client.agents.messages.create(
                    agent_id, messages=[{"role": "user", "content": f"Record ({timestamp}):\n{text}"}]
                ),
            )
        finally:
            self._relay.context = None
        # Letta answers a tool call it could not run (arguments that are not JSON, an unknown block) with an
        # error tool return and ends the turn normally: the episode would leave no memory, silently.
        failed = [
            str(getattr(message, "tool_return", "") or "")
            for message in getattr(response, "messages", [])
            if getattr(message, "message_type", "") == "tool_return_message" and getattr(message, "status", "") == "error"
        ]
        if failed:
            raise LettaError(f"Letta's agent could not use the model's reply to episode {episode_id!r}: {failed[0][:300]}")
        self._stats["episodes_memorized"] += 1
        after = self._lines()
        # A line the turn added (or rewrote) is the episode's; a line kept keeps its writer; a line gone is forgotten.
        kept = {key: ref for key, ref in self._written.items() if key in after}
        self._written = {**kept, **dict.fromkeys(after - self._seen - kept.keys(), episode_id)}
        self._seen = after

    def _blocks(self) -> list[dict[str, Any]]:
        agent_id = self._agent()
        page = self._call("read core memory", lambda: self._client.agents.blocks.list(agent_id))
        # The first page only: letta-client 1.12 pages by cursor, which a 0.11 server ignores (iterating never ends).
        return [{"label": b.label, "description": b.description, "value": b.value, "limit": b.limit} for b in page.items]

    def _lines(self) -> set[tuple[str, str]]:
        """``(block label, line)`` for every non-blank line of the core memory now."""
        return {(str(block["label"]), line.strip()) for block in self._blocks() for line in str(block["value"]).split("\n") if line.strip()}

    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """The core memory blocks as Letta shows them to its agent, once the model has written a line in them."""
        return render_memory_blocks(self._blocks()) if self._written else None

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The core-memory lines the model wrote, nearest the query first, as their episodes (``fused``: with archival search)."""
        if not query.strip():
            return []
        limit = max(1, min(limit or 10, self._max_results))
        lines = [(key, ref) for key, ref in self._written.items() if self._in_range(ref, filters)]
        ranked: list[str] = []
        shown: dict[str, list[str]] = {}
        if lines:
            vectors = self._embedder.encode([query] + [line for (_, line), _ in lines])
            scores = vectors[1:] @ vectors[0]
            for index in sorted(range(len(lines)), key=lambda i: (-float(scores[i]), i)):
                (_, line), ref = lines[index]
                ranked.append(ref)
                if len(shown.setdefault(ref, [])) < 4:
                    shown[ref].append(line)
        rankings = {"core_memory": ranked}
        archival: dict[str, str] = {}
        if self._search == FUSED:
            archival = {result.ref_id: result.text for result in super().search(query, filters, limit)}
            rankings["archival"] = list(archival)
        results = []
        for item in reciprocal_rank_fusion(rankings)[:limit]:
            text = "\n".join(part for part in ("\n".join(shown.get(item.key, [])), archival.get(item.key, "")) if part)
            stamp = self._episodes[item.key][0] if item.key in self._episodes else None
            results.append(SearchResult(ref_id=item.key, text=text, score=round(item.score, 6), metadata={"timestamp": stamp}))
        return results

    def _in_range(self, ref: str, filters: dict[str, Any] | None) -> bool:
        day = self._episodes.get(ref, ("", ""))[0][:10]
        start, end = (filters or {}).get("start_date"), (filters or {}).get("end_date")
        return not (start and day < str(start)[:10]) and not (end and day > str(end)[:10])

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search over the core memory, a date range, and the core memory as the agent's block of context."""
        # Two blocks (human, persona) at Letta's default size, and the template around them.
        block = ContextBlock(ref_id=CORE_MEMORY_REF, max_tokens=2 * BLOCK_CHARS // 4 + 500, title="core memory")
        return dataclasses.replace(super().get_capabilities(), context_block=block)
