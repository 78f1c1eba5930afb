"""The deterministic offline agent (SPEC §4): no network, no model, no randomness.

It measures what a memory surfaces, not how well an LLM reasons:
capabilities -> search with the question -> retrieve the best refs the budget
allows (batched when the memory offers ``batch_retrieve``) -> an extractive
answer made of the retrieved sentences most related to the question, each
cited; when no retrieved sentence shares a word with the question, the first
claim of each retrieved document in the memory's order (it gives up only when
nothing was retrieved). An adapter's block of context (``context()``) is read as
the first retrieved document. Reports label its scores as coming from this agent.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pytest_lens.agents.base import AgentAnswer, AgentQuestion
from pytest_lens.citations import split_sentences
from pytest_lens.execution.bridge import ToolBridge
from pytest_lens.text import content_terms

__all__ = ["NO_EVIDENCE_ANSWER", "OfflineAgent"]

NO_EVIDENCE_ANSWER = "I could not find sufficient information in memory to answer this question."
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*$")
_NO_BRACKETS = str.maketrans("[]", "()")


@dataclass(frozen=True)
class _Candidate:
    ref_id: str
    rank: int
    position: int
    text: str
    terms: frozenset[str]


class OfflineAgent:
    """Deterministic extractive agent; the default ``--lens-agent=offline``."""

    name = "offline"
    description = "offline (deterministic extractive agent, no LLM)"

    def __init__(self, search_limit: int = 10, max_sentences: int = 12, first_batch: int = 3) -> None:
        self.search_limit = search_limit
        self.max_sentences = max_sentences
        self.first_batch = first_batch

    def answer(self, question: AgentQuestion, bridge: ToolBridge) -> AgentAnswer:
        """Search, retrieve within budget, extract and cite."""
        tracker = bridge.tracker
        bridge.begin_turn()
        capabilities = _json(bridge.call("memory_capabilities").content)
        extra = {tool.get("name") for tool in capabilities.get("extra_tools", []) if isinstance(tool, dict)}
        batch = "batch_retrieve" in extra

        bridge.begin_turn()
        max_results = capabilities.get("max_results_per_search")
        limit = min(self.search_limit, max_results) if isinstance(max_results, int) and max_results > 0 else self.search_limit
        hits = _json(bridge.call("memory_search", {"query": question.prompt, "limit": limit}).content)
        hit_list = [hit for hit in hits if isinstance(hit, dict) and isinstance(hit.get("ref_id"), str)] if isinstance(hits, list) else []
        ranked = list(dict.fromkeys(hit["ref_id"] for hit in hit_list))

        documents: dict[str, str] = {}
        # The adapter's block of context is read like a retrieved document, before anything the search found.
        context = bridge.context
        if context is not None:
            documents[context.ref_id] = context.text
            ranked = [context.ref_id, *(ref for ref in ranked if ref != context.ref_id)]
        pending = [ref for ref in ranked if ref not in documents]
        doc_tokens: list[int] = []
        batch_size = self.first_batch
        # Keep one turn for the answer itself.
        while pending and tracker.turns + 1 < tracker.budget.max_turns and tracker.remaining_tool_calls > 0:
            if tracker.remaining_result_tokens <= 0:
                break
            if doc_tokens:
                per_doc = max(1, math.ceil(sum(doc_tokens) / len(doc_tokens)))
                batch_size = tracker.remaining_result_tokens // per_doc
                if batch_size < 1:
                    break
            bridge.begin_turn()
            take = pending[: max(1, batch_size)] if batch else pending[: max(1, min(batch_size, tracker.remaining_tool_calls))]
            pending = pending[len(take) :]
            if batch:
                outcome = bridge.call("batch_retrieve", {"ref_ids": take})
                for doc in _documents(_json(outcome.content)):
                    documents.setdefault(doc["ref_id"], doc["text"])
                if take:
                    doc_tokens.append(max(1, outcome.record.result_tokens // len(take)))
            else:
                for ref in take:
                    if tracker.remaining_result_tokens <= 0 or tracker.remaining_tool_calls <= 0:
                        pending.insert(0, ref)
                        break
                    outcome = bridge.call("memory_retrieve", {"ref_id": ref})
                    doc = _json(outcome.content)
                    if not outcome.is_error and isinstance(doc, dict) and isinstance(doc.get("text"), str):
                        documents.setdefault(str(doc.get("ref_id", ref)), doc["text"])
                        doc_tokens.append(max(1, outcome.record.result_tokens))

        # Hits never retrieved still count as evidence through their snippets.
        for hit in hit_list:
            if isinstance(hit.get("text"), str):
                documents.setdefault(hit["ref_id"], hit["text"])
        bridge.begin_turn()
        return AgentAnswer(self._compose(question.prompt, ranked, documents))

    def compose(self, prompt: str, documents: dict[str, str]) -> str:
        """The extractive answer this agent would give from ``documents`` (``ref_id -> text``, best first)."""
        return self._compose(prompt, list(documents), documents)

    def _compose(self, prompt: str, ranked: list[str], documents: dict[str, str]) -> str:
        query = set(content_terms(prompt))
        order = ranked + [ref for ref in documents if ref not in ranked]
        candidates = [cand for rank, ref in enumerate(order) if ref in documents for cand in _candidates(ref, rank, documents[ref])]
        if not candidates:
            return NO_EVIDENCE_ANSWER
        # Inverse document frequency over the candidate sentences weights rare query terms up.
        frequency = Counter(term for cand in candidates for term in cand.terms & query)
        total = len(candidates)

        def score(cand: _Candidate) -> float:
            # fsum is exactly rounded, so equal scores tie exactly whatever order the set yields its terms in.
            return math.fsum(math.log(1 + total / frequency[term]) for term in cand.terms & query)

        best: dict[str, tuple[float, _Candidate]] = {}
        for cand in candidates:
            value = score(cand)
            if value > 0 and (cand.ref_id not in best or value > best[cand.ref_id][0]):
                best[cand.ref_id] = (value, cand)
        chosen = sorted(best.values(), key=lambda item: (item[1].rank, item[1].position))[: self.max_sentences]
        if not chosen:
            # No retrieved sentence repeats a word of the question ("summaries" vs a "Daily Operations Summary"):
            # the memory still ranked these documents for it, so the agent answers from that ranking (each
            # document's first claim, best first) rather than give up with the evidence in hand.
            chosen = [(0.0, cand) for cand in candidates if cand.position == 0][: self.max_sentences]
        # Brackets inside quoted evidence ("[SEVERE]") would read as citations; only ours may use them.
        lines = [f"- {cand.text.rstrip().translate(_NO_BRACKETS)} [{cand.ref_id}]" for _, cand in chosen]
        return "\n".join(lines)


def _candidates(ref_id: str, rank: int, text: str) -> list[_Candidate]:
    """Claim-sized fragments of a document, each prefixed with its date and nearest heading."""
    return [_Candidate(ref_id, rank, position, shown, terms) for position, (shown, terms) in enumerate(_fragments(text))]


@functools.lru_cache(maxsize=4096)
def _fragments(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    # The same episodes are retrieved for many questions: split each text once.
    date_match = _DATE.search(text[:200])
    date = date_match.group(1) if date_match else None
    heading: str | None = None
    found: list[tuple[str, frozenset[str]]] = []
    for line in text.splitlines():
        title = _HEADING.match(line)
        if title:
            heading = title.group(1)
            continue
        for sentence in split_sentences(line.strip().lstrip("-*• ").strip()):
            context = ", ".join(part for part in (date, heading if heading and (date is None or date not in heading) else None) if part)
            shown = f"{context}: {sentence.text}" if context else sentence.text
            found.append((shown, frozenset(content_terms(shown))))
    return tuple(found)


def _json(content: str) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return {}


def _documents(payload: Any) -> list[dict[str, str]]:
    """Documents in a ``batch_retrieve`` result: ``{"documents": [...]}`` or a bare list."""
    items = payload.get("documents", []) if isinstance(payload, dict) else payload if isinstance(payload, list) else []
    return [
        {"ref_id": item["ref_id"], "text": item["text"]}
        for item in items
        if isinstance(item, dict) and isinstance(item.get("ref_id"), str) and isinstance(item.get("text"), str)
    ]
