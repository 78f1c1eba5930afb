"""``context.size``, ``context.deterministic`` and ``context.prepare_stable``: the block of context an adapter writes into the prompt.

They apply to adapters whose manifest declares a ``context_block`` (memory policies).
The block is checked exactly as a LENS run checks it before the agent sees it
(:func:`~pytest_lens.execution.memory_context.context_problem`): declared, and at most the
declared ``max_tokens``. Since a run asks for it once per checkpoint and one question
may run alone (``-k``), the block must depend only on what was ingested: two fresh
instances fed the same stream give the same block, and ``prepare`` called again at the
same checkpoint leaves it as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate
from pytest_lens.conformance.strategies import episode_lists, scope_ids
from pytest_lens.conformance.subject import Subject
from pytest_lens.contract.adapter import CapabilityManifest
from pytest_lens.execution.memory_context import context_problem

__all__ = ["CONTEXT_DETERMINISTIC", "CONTEXT_PREPARE_STABLE", "CONTEXT_SIZE"]


@dataclass(frozen=True)
class ContextExample:
    """A stream loaded and prepared at its last episode; ``extra_prepares`` more ``prepare`` calls where asked."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    extra_prepares: int


@st.composite
def _context_examples(draw: st.DrawFn, manifest: CapabilityManifest, long_text: bool = False) -> ContextExample:
    episodes = draw(episode_lists(min_size=1, max_size=8, long_text=long_text))
    return ContextExample(draw(scope_ids()), episodes, draw(st.integers(1, 2)))


def _long_context_examples(manifest: CapabilityManifest) -> st.SearchStrategy[ContextExample]:
    # Long episodes too: a block has to stay within its size whatever the stream holds.
    return _context_examples(manifest, long_text=True)


def _declared(manifest: CapabilityManifest) -> str | None:
    return None if manifest.context_block is not None else "the manifest declares no context_block"


def _block(subject: Subject, example: ContextExample) -> str | None:
    """The block after loading the stream (``context(scope, n)``); a violation when it breaks its declaration."""
    checkpoint = len(example.episodes)
    subject.load(example.scope_id, example.episodes)
    text = subject.caller.context(example.scope_id, checkpoint)
    block, problem = context_problem(text, subject.caller)
    if problem is not None:
        raise ClauseViolation(f"after {checkpoint} episodes, context({abbreviate(example.scope_id)}, {checkpoint}) {problem}")
    return block.text if block is not None else None


def _check_size(context: ClauseContext, example: ContextExample) -> None:
    with context.fresh() as subject:
        _block(subject, example)


def _check_deterministic(context: ClauseContext, example: ContextExample) -> None:
    with context.fresh() as subject:
        first = _block(subject, example)
    with context.fresh() as subject:
        second = _block(subject, example)
    if first != second:
        raise ClauseViolation(
            f"two fresh instances fed the same {len(example.episodes)} episodes give different blocks: "
            f"{abbreviate(first)} and {abbreviate(second)}"
        )


def _check_prepare_stable(context: ClauseContext, example: ContextExample) -> None:
    checkpoint = len(example.episodes)
    with context.fresh() as subject:
        first = _block(subject, example)
        for _ in range(example.extra_prepares):
            subject.prepare(example.scope_id, checkpoint)
        again = subject.caller.context(example.scope_id, checkpoint)
    if first != (again if again is not None and again.strip() else None):
        raise ClauseViolation(
            f"with prepare({abbreviate(example.scope_id)}, {checkpoint}) called {example.extra_prepares + 1} times, "
            f"context() changed from {abbreviate(first)} to {abbreviate(again)}",
            method="prepare",
        )


CONTEXT_SIZE = Clause(
    id="context.size",
    contract="context(scope, checkpoint) returns None or a block within the manifest's declared context_block.max_tokens",
    method="context",
    examples=_long_context_examples,
    check=_check_size,
    applies=_declared,
    cost=0.3,
)

CONTEXT_DETERMINISTIC = Clause(
    id="context.deterministic",
    contract="context(scope, checkpoint) depends only on the stream: two fresh instances fed the same episodes give the same block",
    method="context",
    examples=_context_examples,
    check=_check_deterministic,
    applies=_declared,
    cost=0.2,
)

CONTEXT_PREPARE_STABLE = Clause(
    id="context.prepare_stable",
    contract="prepare(scope, checkpoint) called again at the same checkpoint leaves context(scope, checkpoint) unchanged",
    method="context",
    examples=_context_examples,
    check=_check_prepare_stable,
    applies=_declared,
    cost=0.2,
)
