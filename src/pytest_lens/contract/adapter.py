"""The memory-adapter contract (SPEC §2).

An adapter wraps one memory system. The runner drives it (``reset``, ``ingest``,
``prepare``); the answering agent only ever sees ``search``, ``retrieve``,
``get_capabilities`` and the extra tools the manifest declares.

The signatures match the public LENS reference implementation, so an existing
LENS adapter ports by changing its imports::

    from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult

Subclassing :class:`MemoryAdapter` is recommended but not required: any class
with the five required methods is accepted.

Two optional class attributes tell pytest-lens how far it may answer questions
concurrently (``--lens-concurrency``); both default to ``False``, which is always safe:

- ``lens_thread_safe = True``: ``search``, ``retrieve``, ``get_capabilities``,
  ``call_extended_tool``, ``get_synthetic_refs`` and ``lens_stats`` may run at the same
  time from several threads (never at the same time as ``reset``, ``ingest``, ``prepare``
  or ``close``). Otherwise every call is made from the one thread that owns the adapter.
- ``lens_isolated_instances = True``: two instances of the class, each with its own
  ``storage_dir``, share no state, so pytest-lens may stream a second instance to a later
  checkpoint while the first one answers. Do not declare it for an adapter whose instances
  share a database, a server-side collection or files outside ``storage_dir``.

A third says what the adapter's memory is made of:

- ``lens_model_built = True``: the memory the adapter searches is written by the model it is
  given (``lens_llm``): extracted facts, a graph, summaries, an agent's core memory. With
  ``--lens-controls`` pytest-lens then also runs the adapter against an *empty extractor*
  (a local scripted server whose replies are well formed and extract nothing), and flags the
  adapter when its score does not fall: it would be scoring something other than what the
  model built.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "REQUIRED_METHODS",
    "AdapterUnavailable",
    "CapabilityManifest",
    "ContextBlock",
    "Document",
    "ExtraTool",
    "FilterField",
    "MemoryAdapter",
    "SearchResult",
    "UnknownToolError",
    "declares_isolated_instances",
    "declares_model_built",
    "declares_thread_safe",
]

#: Methods every adapter must define; ``prepare``, ``context``, ``call_extended_tool``,
#: ``get_synthetic_refs``, ``lens_stats`` and ``close`` have defaults.
REQUIRED_METHODS = ("reset", "ingest", "search", "retrieve", "get_capabilities")


@dataclass(frozen=True)
class SearchResult:
    """One ranked hit returned by :meth:`MemoryAdapter.search`."""

    ref_id: str
    text: str
    score: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    """The full stored text of one item, returned by :meth:`MemoryAdapter.retrieve`."""

    ref_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilterField:
    """A metadata field the agent may filter searches on.

    ``field_type`` is one of ``string``, ``number``, ``boolean``, ``date`` or
    ``enum`` (then ``enum_values`` lists the allowed values).
    """

    name: str
    field_type: str
    description: str = ""
    enum_values: list[str] | None = None


@dataclass(frozen=True)
class ExtraTool:
    """An adapter-specific tool offered to the agent, e.g. ``batch_retrieve``.

    ``parameters`` is the JSON Schema of the tool's arguments object.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ContextBlock:
    """Declares the block of context an adapter writes into the agent's prompt (:meth:`MemoryAdapter.context`).

    ``ref_id`` is the synthetic ref the agent cites the block by; ``max_tokens`` is the
    most the block may hold, counted as tool results are (UTF-8 bytes // 4);
    ``title`` names it in the prompt (e.g. ``core memory``).
    """

    ref_id: str
    max_tokens: int
    title: str = "memory context"


@dataclass(frozen=True)
class CapabilityManifest:
    """What a memory system offers; the agent reads it through ``memory_capabilities``.

    ``context_block`` declares a block of context the adapter gives the agent at every
    checkpoint (see :meth:`MemoryAdapter.context`); ``None``: it gives none.
    """

    search_modes: list[str] = field(default_factory=lambda: ["semantic"])
    filter_fields: list[FilterField] = field(default_factory=list)
    max_results_per_search: int = 10
    supports_date_range: bool = False
    extra_tools: list[ExtraTool] = field(default_factory=list)
    context_block: ContextBlock | None = None


class UnknownToolError(LookupError):
    """Raised by :meth:`MemoryAdapter.call_extended_tool` for a tool it does not offer."""


class AdapterUnavailable(Exception):
    """Raised from an adapter's ``__init__`` when it cannot run here (e.g. no LLM endpoint configured).

    Its questions are skipped with the message as the reason, instead of failing.
    Raise it only for a missing prerequisite the user chose not to provide, never
    to hide a bug.
    """


class MemoryAdapter(abc.ABC):
    """Base class for memory adapters.

    Adapters are constructed once per test session (per xdist worker) with the
    keyword options given by ``--lens-adapter-option``; an adapter whose
    ``__init__`` accepts ``storage_dir`` receives a private temporary directory.
    Only one scope is live at a time: the runner calls ``reset(scope_id)``
    before streaming a scope's episodes.

    Set :attr:`lens_thread_safe` or :attr:`lens_isolated_instances` to let concurrent runs
    use the adapter more freely (see the module docstring).
    """

    #: ``search``/``retrieve``/``get_capabilities``/``call_extended_tool``/``get_synthetic_refs``/``lens_stats``
    #: may be called from several threads at once (between ``prepare`` and the next ``ingest``).
    lens_thread_safe: ClassVar[bool] = False
    #: Separate instances (each with its own ``storage_dir``) share no state.
    lens_isolated_instances: ClassVar[bool] = False
    #: The memory search reads is written by the model given as ``lens_llm`` (the empty-extraction control applies).
    lens_model_built: ClassVar[bool] = False

    @abc.abstractmethod
    def reset(self, scope_id: str) -> None:
        """Forget everything stored for ``scope_id``."""

    @abc.abstractmethod
    def ingest(
        self,
        episode_id: str,
        scope_id: str,
        timestamp: str,
        text: str,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Store one episode. ``timestamp`` is ISO 8601."""

    def prepare(self, scope_id: str, checkpoint: int) -> None:  # noqa: B027 - optional hook
        """Consolidate before a checkpoint's questions (summaries, graphs). Default: nothing."""

    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """The block of context the agent gets in its prompt at this checkpoint, or ``None``. Default: none.

        Called once per checkpoint, after :meth:`prepare`, before the checkpoint's
        questions. A memory policy (a core-memory block, a running summary) returns
        what it consolidated; the agent reads it before searching, it is charged to
        the question's result tokens like a tool result, and cited by the ref the
        manifest's ``context_block`` declares (required whenever a block is returned).
        It must be deterministic and at most ``context_block.max_tokens`` long.
        """
        return None

    @abc.abstractmethod
    def search(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[SearchResult]:
        """Return at most ``limit`` results, best first."""

    @abc.abstractmethod
    def retrieve(self, ref_id: str) -> Document | None:
        """Return the full text stored under ``ref_id``, or ``None`` if unknown."""

    @abc.abstractmethod
    def get_capabilities(self) -> CapabilityManifest:
        """Describe search modes, filters, limits and extra tools."""

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """Run an extra tool declared in the manifest; the result must be JSON-serialisable."""
        raise UnknownToolError(f"{type(self).__name__} offers no tool named {name!r}")

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """Adapter-made documents (``(ref_id, text)``) the agent may cite, e.g. a summary."""
        return []

    def lens_stats(self) -> dict[str, int]:
        """Cumulative counters the LENS summary reports per adapter (e.g. embedding-cache hits). Default: none."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release files and connections at the end of the session. Default: nothing."""


def declares_thread_safe(adapter: Any) -> bool:
    """Whether ``adapter`` declares ``lens_thread_safe = True`` (only the boolean ``True`` counts)."""
    return getattr(adapter, "lens_thread_safe", False) is True


def declares_isolated_instances(adapter: Any) -> bool:
    """Whether ``adapter`` declares ``lens_isolated_instances = True`` (only the boolean ``True`` counts)."""
    return getattr(adapter, "lens_isolated_instances", False) is True


def declares_model_built(adapter: Any) -> bool:
    """Whether ``adapter`` (a class or an instance) declares ``lens_model_built = True`` (only the boolean ``True`` counts)."""
    return getattr(adapter, "lens_model_built", False) is True
