"""What the memory policies share: sqlite-hybrid's retrieval, the stream cut into folds, a bounded block of context.

A policy buffers the episodes as they are ingested (sqlite-hybrid stores, indexes and
embeds them as usual). At ``prepare`` it folds the episodes not yet folded into its
state with the run's LLM, and renders the state as its block of context, which the
agent gets in its prompt (``context()``), cites by the policy's synthetic ref and may
also ``retrieve``.

Folds are cut at fixed stream positions: consecutive episodes, at most
``episodes_per_fold`` of them and at most ``fold_input_tokens`` tokens of record text
(one longer episode is a fold of its own, cut to that size). A fold's result is kept
by its position, and the last, still open fold is redone when it grows, so the
context at checkpoint N depends only on the first N episodes, never on which
checkpoints were prepared before: one question run alone sees the block the whole
scope's run shows it. Every request carries a ``max_tokens``, goes through the run's
LLM client (and so its request cache), and every reply is cut to its size.

Without an LLM endpoint configured a policy is unavailable and its questions are
skipped, saying how to configure one.
"""

from __future__ import annotations

import abc
import dataclasses
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens import AdapterUnavailable, CapabilityManifest, ContextBlock, Document
from pytest_lens.records.budget import result_tokens

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["PolicyAdapter", "Record", "fit_tokens", "fold_spans", "render_records", "words_for"]

State = TypeVar("State")


@dataclass(frozen=True)
class Record:
    """One buffered episode: what a fold shows of it (never its id)."""

    timestamp: str
    text: str


def fit_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """``text`` cut to at most ``max_tokens`` tokens (UTF-8 bytes // 4, as results are charged), at a line end when one is near.

    Returns the text and whether it was cut.
    """
    text = text.strip()
    if result_tokens(text) <= max_tokens:
        return text, False
    cut = text.encode("utf-8")[: max_tokens * 4].decode("utf-8", errors="ignore")
    line_end = cut.rfind("\n")
    if line_end > len(cut) // 2:
        cut = cut[:line_end]
    return cut.rstrip(), True


def words_for(tokens: int) -> int:
    """A word limit to ask a model for, for a block of ``tokens`` tokens (about 6 bytes, 1.5 tokens, a word)."""
    return max(20, tokens * 2 // 3)


def fold_spans(sizes: Sequence[int], per_fold: int, max_tokens: int) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive folds over episodes of ``sizes`` tokens: at most ``per_fold`` and ``max_tokens`` each.

    An episode larger than ``max_tokens`` is a fold of its own. Spans are cut greedily
    from the start, so a later episode never moves an earlier boundary.
    """
    spans: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        if index > start and (index - start >= per_fold or used + size > max_tokens):
            spans.append((start, index))
            start, used = index, 0
        used += size
    if start < len(sizes):
        spans.append((start, len(sizes)))
    return spans


def render_records(records: Sequence[Record], max_tokens: int) -> str:
    """Records as a fold shows them, by timestamp; one record longer than ``max_tokens`` is cut (and says so)."""
    shown = []
    for record in records:
        text, cut = fit_tokens(record.text, max_tokens)
        if cut:
            text += f"\n[... the rest of this record ({result_tokens(record.text) - result_tokens(text):,} tokens) is not shown]"
        shown.append(f"### Record ({record.timestamp})\n{text}")
    return "\n\n".join(shown)


class PolicyAdapter(SQLiteHybridAdapter, abc.ABC, Generic[State]):
    """sqlite-hybrid's search and retrieval, plus a block of context a policy folds from the stream with the run's LLM.

    Options, besides sqlite-hybrid's: ``model`` (another model on the run's endpoint),
    ``context_max_tokens`` (the declared size of the block, default 1500),
    ``episodes_per_fold`` (10) and ``fold_input_tokens`` (8000): how much of the stream
    one fold request shows.
    """

    #: The name the policy is registered under (also the ``purpose`` of its LLM requests).
    policy_name: ClassVar[str]
    #: The synthetic ref the agent cites the block by, and the block's title in the agent's prompt.
    context_ref: ClassVar[str]
    context_title: ClassVar[str]

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        context_max_tokens: int = 1500,
        episodes_per_fold: int = 10,
        fold_input_tokens: int = 8000,
        **retrieval: Any,
    ) -> None:
        if lens_llm is None:
            raise AdapterUnavailable(
                f"{self.policy_name} needs an LLM to fold its memory: pass --lens-llm-base-url and --lens-agent-model "
                "(or --lens-judge-model); its requests go through the LLM cache like the agent's"
            )
        for name, value, least in (
            ("context_max_tokens", context_max_tokens, 50),
            ("episodes_per_fold", episodes_per_fold, 1),
            ("fold_input_tokens", fold_input_tokens, 100),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"option {name} must be an integer of at least {least}, got {value!r}")
        if model is not None and not isinstance(model, str):
            raise TypeError(f"option model must be a string, got {model!r}")
        super().__init__(storage_dir, **retrieval)
        self._llm = lens_llm.with_model(model) if model else lens_llm
        self.context_max_tokens = context_max_tokens
        self._per_fold = episodes_per_fold
        self._fold_tokens = fold_input_tokens
        self._records: dict[str, Record] = {}
        self._folded: dict[tuple[int, int], State] = {}
        self._block: str | None = None
        self._counters: Counter[str] = Counter()
        self._counting = threading.Lock()  # folds may ask from several threads (policy-faceted)

    # -- what a policy defines ---------------------------------------------------------------
    @abc.abstractmethod
    def initial_state(self) -> State:
        """The state before any fold."""

    @abc.abstractmethod
    def fold(self, state: State, records: Sequence[Record]) -> State:
        """``state`` updated with ``records`` (one fold), through :meth:`ask`."""

    @abc.abstractmethod
    def render(self, state: State, span: tuple[int, int]) -> str:
        """The block of context for ``state`` (the state after the fold ``span``); at most :attr:`context_max_tokens`."""

    # -- the stream -----------------------------------------------------------------------
    def reset(self, scope_id: str) -> None:
        """Forget the episodes, the folds and the block."""
        super().reset(scope_id)
        self._records.clear()
        self._folded.clear()
        self._block = None
        self.forget()

    def forget(self) -> None:
        """Drop what a policy keeps besides its folds (called by ``reset``, and when an episode's text changes)."""

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store and index the episode (sqlite-hybrid), and buffer it for the next fold."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        record = Record(timestamp, text)
        if self._records.get(episode_id, record) != record:  # a re-ingested episode changes every fold from its own on
            self._folded.clear()
            self.forget()
        self._records[episode_id] = record

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Embed what is queued, fold the episodes not yet folded, render the block of context."""
        super().prepare(scope_id, checkpoint)
        records = list(self._records.values())
        spans = fold_spans([result_tokens(r.text) for r in records], self._per_fold, self._fold_tokens)
        state = self.initial_state()
        for span in spans:
            if span not in self._folded:
                self._folded[span] = self.fold(state, records[span[0] : span[1]])
                self._counters["policy_folds"] += 1
            state = self._folded[span]
        block, cut = fit_tokens(self.render(state, spans[-1]), self.context_max_tokens) if spans else ("", False)
        self._counters["policy_blocks_cut"] += cut
        self._block = block or None

    def records_text(self, records: Sequence[Record]) -> str:
        """``records`` as a fold request shows them."""
        return render_records(records, self._fold_tokens)

    # -- the LLM ------------------------------------------------------------------------------
    def ask(self, system: str, user: str, max_tokens: int) -> tuple[str, bool]:
        """One request (``max_tokens`` bounds the reply); the reply without reasoning, cut to ``max_tokens``, and whether it was cut."""
        from pytest_lens.agents.llm import strip_reasoning

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        reply = self._llm.complete(messages, max_tokens=max_tokens, purpose=self.policy_name)
        text, cut = fit_tokens(strip_reasoning(reply.content), max_tokens)
        with self._counting:
            self._counters.update(policy_llm_requests=1, policy_replies_cut=int(cut), policy_empty_replies=int(not text))
        return text, cut

    # -- the block of context -------------------------------------------------------------------
    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """The block rendered at the last ``prepare``."""
        return self._block

    def retrieve(self, ref_id: str) -> Document | None:
        """The block under the policy's ref; otherwise the stored episode."""
        if ref_id == self.context_ref:
            return Document(ref_id=ref_id, text=self._block) if self._block else None
        return super().retrieve(ref_id)

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """The block is a document the agent may cite."""
        return [(self.context_ref, self._block)] if self._block else []

    def get_capabilities(self) -> CapabilityManifest:
        """sqlite-hybrid's manifest, declaring the block of context."""
        block = ContextBlock(self.context_ref, self.context_max_tokens, self.context_title)
        return dataclasses.replace(super().get_capabilities(), context_block=block)

    def lens_stats(self) -> dict[str, int]:
        """sqlite-hybrid's counters, and the policy's: folds, LLM requests, replies cut to size or empty, blocks cut."""
        return {**super().lens_stats(), **{name: self._counters[name] for name in _COUNTERS}}


_COUNTERS = ("policy_folds", "policy_llm_requests", "policy_replies_cut", "policy_empty_replies", "policy_blocks_cut")
