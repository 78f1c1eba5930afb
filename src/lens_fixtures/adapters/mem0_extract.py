"""mem0 with extraction (``infer=True``, optional extra ``pytest-lens[mem0]``): the LENS paper's mem0-extract.

Each episode is given to ``Memory.add(..., infer=True)``: mem0 asks the model (one
JSON-mode chat completion per episode, with the last messages and the most similar
existing memories as context) for the facts worth remembering, embeds them and
stores them in its local Qdrant. Search is mem0's own search over those facts.

- LLM: mem0's model slot holds :class:`pytest_lens.llm.client.ChatClient` (the run's
  ``lens_llm``), so every extraction goes through the run's endpoint and request
  cache: a recorded run replays with no request. mem0 dates its prompt with the
  wall clock (``Observation Date`` and ``Current Date``); the adapter writes the
  episode's own date there instead, so the memory a stream builds does not depend on
  the day it runs (and the model reads the episode's date, not today's).
- Extraction failure: a reply mem0 cannot parse (not JSON, no ``memory`` list, an
  item without ``text``) is raised as mem0's own ``LLMError`` ("LLM extraction
  failed: ...") and becomes an adapter fault naming the episode. mem0 itself logs such a
  reply and stores nothing, which would be scored as a bad memory.
- An episode the model extracts nothing from, or whose facts mem0 drops as duplicates
  of earlier ones, leaves no memory: search can never return its ref. Counted in
  :meth:`lens_stats` (``episodes_without_memories``); with ``keep_episodes`` off it
  also cannot be retrieved. A stream that has left no memory at all after
  ``empty_memory_after`` episodes (3) is an :class:`EmptyMemoryError` at ``prepare``: a
  fault of that checkpoint's questions, never an empty memory scored as a poor one.
- ``retrieve`` returns the episode verbatim from the adapter's own copy
  (``keep_episodes``, the default), as the runner's episode vault does: mem0 keeps
  only its extracted facts. With ``keep_episodes=False`` it returns the facts mem0
  holds for the episode, joined, which fails ``retrieve.roundtrip`` by design.
- ``prepare()`` stores nothing: mem0's ``add`` is synchronous, so every memory is
  stored when ``ingest`` returns. It only checks that the stream left some memory.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.mem0_adapter import _USER, Mem0Memory
from lens_fixtures.adapters.model_required import require_llm
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import Document, SearchResult

if TYPE_CHECKING:
    from pytest_lens.embedding import Embedder
    from pytest_lens.llm.client import ChatClient

__all__ = ["EmptyMemoryError", "ExtractionReplyError", "Mem0ExtractAdapter", "parse_mem0_extraction"]

_DATED_SECTION = re.compile(r"(## (?:Observation|Current) Date\n)[^\n]*")


class ExtractionReplyError(ValueError):
    """The model's extraction reply is not what the memory system asked for."""


class EmptyMemoryError(RuntimeError):
    """mem0 stored nothing from any episode of the stream so far: the model extracted nothing worth keeping."""


def parse_mem0_extraction(reply: str) -> list[dict[str, Any]]:
    """The ``memory`` items of a mem0 extraction reply, parsed as mem0 parses it; :class:`ExtractionReplyError` otherwise.

    mem0 strips code fences, reads the JSON object (or the first one in the text) and takes its ``memory``
    list; an empty reply means nothing to remember. Everything mem0 would silently turn into "no memories" is an
    error here: text that is not a JSON object, no ``memory`` list, an item that is not an object with ``text``.
    """
    from mem0.memory.utils import extract_json, remove_code_blocks

    text = remove_code_blocks(reply)
    if not text or not text.strip():
        return []
    import json

    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError:
        try:
            data = json.loads(extract_json(text), strict=False)
        except json.JSONDecodeError as exc:
            raise ExtractionReplyError(f"the reply is not JSON ({exc}): {_shown(reply)}") from None
    if not isinstance(data, dict):
        raise ExtractionReplyError(f"the reply is a JSON {type(data).__name__}, not an object with a 'memory' list: {_shown(reply)}")
    items = data.get("memory")
    if not isinstance(items, list):
        raise ExtractionReplyError(f"the reply has no 'memory' list (keys: {sorted(data)}): {_shown(reply)}")
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ExtractionReplyError(f"memory item {index} is not an object with a 'text' string: {_shown(reply)}")
    return items


def _shown(reply: str) -> str:
    flat = " ".join(reply.split())
    return repr(flat[:200] + ("..." if len(flat) > 200 else ""))


class Mem0ExtractAdapter(Mem0Memory):
    """mem0 ``Memory`` with ``infer=True``: the run's model extracts facts, our embedder and local Qdrant store them.

    Options: ``model`` (the extraction model; the run's ``lens_llm`` model by default),
    ``extraction_max_tokens`` (1024), ``keep_episodes`` (True: ``retrieve`` returns the episode),
    ``empty_memory_after`` (3: ``prepare`` fails when this many episodes or more were read and none left a memory),
    ``snippet_chars`` (500), ``max_results`` (20), ``threshold`` (0) and the embedder's options,
    as for the ``mem0`` adapter.
    """

    lens_model_built = True

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        extraction_max_tokens: int = 1024,
        keep_episodes: bool = True,
        empty_memory_after: int = 3,
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        snippet_chars: int = 500,
        max_results: int = 20,
        threshold: float = 0.0,
    ) -> None:
        lens_llm = require_llm(lens_llm, "mem0-extract needs an LLM to extract memories")
        if isinstance(empty_memory_after, bool) or not isinstance(empty_memory_after, int) or empty_memory_after < 1:
            raise ValueError(f"mem0-extract: option empty_memory_after must be an integer of at least 1, got {empty_memory_after!r}")
        self._empty_after = empty_memory_after
        self._llm = (lens_llm.with_model(model) if model else lens_llm).with_max_tokens(extraction_max_tokens)
        self._keep = keep_episodes
        self._episodes: dict[str, tuple[str, str]] = {}
        self._memories: dict[str, list[str]] = {}
        self._stats = {
            "extraction_calls": 0,
            "extraction_prompt_tokens": 0,
            "extraction_completion_tokens": 0,
            "episodes_without_memories": 0,
        }
        self._date = ""
        super().__init__(
            storage_dir,
            "mem0-extract",
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
            embedder=embedder,
            snippet_chars=snippet_chars,
            max_results=max_results,
            threshold=threshold,
            llm=self._lens_model,
        )

    def _lens_model(self, config: Any) -> Any:
        """mem0's LLM interface over the run's chat client (built once mem0 is imported)."""
        from mem0.llms.base import LLMBase

        adapter = self

        class LensLLM(LLMBase):  # type: ignore[misc]  # mem0 ships no type information
            def generate_response(self, messages: Any, tools: Any = None, tool_choice: str = "auto", **kwargs: Any) -> str:
                return adapter._complete(messages, kwargs.get("response_format"))

        return LensLLM(config)

    def _complete(self, messages: list[dict[str, Any]], response_format: Any) -> str:
        dated = [
            {**m, "content": _DATED_SECTION.sub(lambda g: g.group(1) + self._date, m["content"])}
            if isinstance(m.get("content"), str)
            else m
            for m in messages
        ]
        reply = self._llm.complete(dated, response_format=response_format, purpose="mem0-extract")
        self._stats["extraction_calls"] += 1
        if reply.usage is not None:
            self._stats["extraction_prompt_tokens"] += reply.usage.prompt_tokens
            self._stats["extraction_completion_tokens"] += reply.usage.completion_tokens
        if response_format is not None:
            parse_mem0_extraction(reply.content)  # raises: mem0 re-raises it as "LLM extraction failed: ..."
        return reply.content

    def reset(self, scope_id: str) -> None:
        """mem0's ``reset`` (collection, history and message log recreated); the episode copies are dropped."""
        self._memory.reset()
        self._episodes.clear()
        self._memories.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """``Memory.add(..., infer=True)``: the model's facts about the episode, each tagged with the episode's id and time."""
        for memory_id in self._memories.pop(episode_id, []):
            self._memory.delete(memory_id)
        metadata = self._metadata(episode_id, timestamp)
        self._date = timestamp.strip()[:10]
        result = self._memory.add([{"role": "user", "content": text}], user_id=_USER, metadata=metadata, infer=True)
        added = [str(item["id"]) for item in result.get("results", []) if item.get("event") == "ADD"]
        self._memories[episode_id] = added
        if not added:
            self._stats["episodes_without_memories"] += 1
        if self._keep:
            self._episodes[episode_id] = (timestamp, text)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Nothing to store (``add`` is synchronous); :class:`EmptyMemoryError` when the stream has left no memory at all."""
        read = len(self._memories)  # the episodes mem0 read without a fault
        if read >= self._empty_after and not any(self._memories.values()):
            raise EmptyMemoryError(
                f"mem0-extract stored no memory from any of the {read} episodes of scope {scope_id!r} read so far: every "
                "extraction came back empty (or only with facts mem0 already held), so there is nothing to search; "
                "an empty memory is not scored as a poor one (option empty_memory_after sets how many episodes this waits for)"
            )

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """``Memory.search`` over the extracted facts, one result per episode (its best facts), best first."""
        if not query.strip():
            return []
        limit = self._limit(limit)
        grouped: dict[str, tuple[float, list[str], Any]] = {}
        for item in self._search(query, filters, limit * 3):
            metadata = item.get("metadata") or {}
            ref_id = metadata.get("ref_id")
            if not isinstance(ref_id, str) or str(item.get("id")) not in self._memories.get(ref_id, ()):
                continue  # not one of this scope's current memories
            score, facts, stamp = grouped.get(ref_id, (float(item.get("score") or 0.0), [], metadata.get("timestamp")))
            facts.append(str(item.get("memory", "")))
            grouped[ref_id] = (score, facts, stamp)
        ranked = sorted(grouped.items(), key=lambda entry: (-entry[1][0], entry[0]))[:limit]
        return [
            SearchResult(
                ref_id=ref, text=excerpt("\n".join(facts), self._snippet_chars), score=round(score, 6), metadata={"timestamp": stamp}
            )
            for ref, (score, facts, stamp) in ranked
        ]

    def retrieve(self, ref_id: str) -> Document | None:
        """The episode verbatim (``keep_episodes``), else the facts mem0 holds for it; ``None`` when it left none."""
        if self._keep:
            kept = self._episodes.get(ref_id)
            return Document(ref_id=ref_id, text=kept[1], metadata={"timestamp": kept[0]}) if kept else None
        facts = [item["memory"] for memory_id in self._memories.get(ref_id, []) if (item := self._memory.get(memory_id))]
        return Document(ref_id=ref_id, text="\n".join(facts)) if facts else None

    def lens_stats(self) -> dict[str, int]:
        """Extraction calls and tokens, episodes that left no memory, and the embedding cache's counters."""
        return {**self._stats, **super().lens_stats()}
