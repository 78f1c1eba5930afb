"""An adapter's block of context for the agent's prompt: fetched once per checkpoint, checked against its declaration.

A memory policy (a core-memory block, a running summary, faceted notes) consolidates
the stream into text the agent reads before it searches. The adapter returns it from
``context(scope_id, checkpoint)``, after ``prepare``, and declares it in its manifest
(``CapabilityManifest.context_block``): the synthetic ref the agent cites it by and the
most tokens it may hold. A block that breaks its declaration is a fault of the adapter's
``context()`` and is not shown to the agent.
"""

from __future__ import annotations

from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.records.budget import result_tokens
from pytest_lens.records.results import AdapterFault, MemoryContext

__all__ = ["context_problem", "fetch_context"]


def context_problem(text: str | None, caller: AdapterCaller) -> tuple[MemoryContext | None, str | None]:
    """``text`` (what ``context()`` returned) as the agent would get it, or what is wrong with it.

    ``None`` (and an empty block) is no context. Raises :class:`AdapterCallError` when
    the manifest cannot be had.
    """
    if text is None or not text.strip():
        return None, None
    declared = caller.capabilities().context_block
    if declared is None:
        return None, "returned a block of context but the manifest declares no context_block (the ref to cite it by, its size)"
    tokens = result_tokens(text)
    if tokens > declared.max_tokens:
        return None, f"returned {tokens:,} tokens of context, more than the declared context_block.max_tokens={declared.max_tokens:,}"
    return MemoryContext(ref_id=declared.ref_id, title=declared.title, text=text, tokens=tokens), None


def fetch_context(caller: AdapterCaller, scope_id: str, checkpoint: int) -> tuple[MemoryContext | None, AdapterFault | None]:
    """Call ``context(scope_id, checkpoint)`` and check the block against the manifest; the fault when it breaks the contract."""
    try:
        text = caller.context(scope_id, checkpoint)
        block, problem = context_problem(text, caller)
    except AdapterCallError as exc:
        return None, exc.fault
    if problem is not None:
        return None, AdapterFault(adapter=caller.label, method="context", kind="bad_return", message=problem)
    return block, None
