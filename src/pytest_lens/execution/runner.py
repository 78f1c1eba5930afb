"""Driving adapters through scope streams (SPEC §1).

:class:`LensRuntime` owns one adapter instance per label in this process and
keeps each one fed with exactly the first N episodes of one scope. Whatever
subset or order of questions pytest runs (``-k``, ``--lf``, ``-x``, random
order, xdist groups), a question at checkpoint N sees exactly the first N
episodes: going backwards, or switching scope, resets and replays.

An adapter may have several instances ("replicas", numbered from 0): replica 0 is
the one every serial question uses; concurrent runs stream further replicas of an
adapter declaring ``lens_isolated_instances`` to later checkpoints, each with its
own storage directory.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_lens.contract.adapter import AdapterUnavailable, CapabilityManifest
from pytest_lens.contract.registry import accepts_keyword, load_adapter_class
from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.execution.bridge import RefAliases
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.execution.memory_context import fetch_context
from pytest_lens.progress import Progress, StreamProgress
from pytest_lens.records.results import AdapterFault, MemoryContext
from pytest_lens.records.settings import AdapterSpec

__all__ = ["MAX_REBUILDS", "AdapterSlot", "LensRuntime", "construct_adapter", "safe_name"]


@dataclass
class AdapterSlot:
    """One adapter instance and how far its current scope has been streamed."""

    label: str
    caller: AdapterCaller | None = None
    construct_fault: AdapterFault | None = None
    #: Why the adapter cannot run here (it raised :class:`AdapterUnavailable`); its questions are skipped.
    unavailable: str | None = None
    scope_id: str | None = None
    ingested: int = 0
    prepared_at: int | None = None
    stream_faults: list[AdapterFault] = field(default_factory=list)
    #: Episodes ingested over the slot's life, replays included (for reports on replay cost).
    ingest_calls: int = 0
    #: The adapter's ``lens_stats()`` counters as last reported (deltas go on question results).
    reported_stats: dict[str, int] = field(default_factory=dict)
    #: The adapter's block of context at ``prepared_at`` (``context()``, called once per checkpoint after ``prepare``).
    context: MemoryContext | None = None
    #: Why there is no block at ``prepared_at`` although the adapter tried to give one; fails that checkpoint's questions only.
    context_fault: AdapterFault | None = None
    #: The scope being streamed and the checkpoints ``prepare`` was called at since its reset (what a rebuild replays).
    scope: LoadedScope | None = None
    prepared: list[int] = field(default_factory=list)
    #: Instances built to replace abandoned ones (at most :data:`MAX_REBUILDS`).
    rebuilds: int = 0
    #: Held while an abandoned instance is rebuilt (questions on several threads may find it abandoned at once).
    rebuilding: threading.Lock = field(default_factory=threading.Lock)

    def checkpoint_faults(self) -> list[AdapterFault]:
        """The faults a question at the prepared checkpoint sees: its stream's, and its context's."""
        return [*self.stream_faults, *([self.context_fault] if self.context_fault is not None else [])]


class LensRuntime:
    """Adapter instances of this process and their streams."""

    def __init__(
        self,
        adapters: Mapping[str, AdapterSpec],
        storage_root: Path,
        *,
        call_timeout: float | None = None,
        opaque_refs: str = "auto",
        lens_llm: Any = None,
    ) -> None:
        self.adapters = dict(adapters)
        self.storage_root = storage_root
        self.call_timeout = call_timeout
        self.opaque_refs = opaque_refs
        #: The run's LLM client, handed to adapters whose ``__init__`` takes ``lens_llm`` (``None``: no LLM configured).
        self.lens_llm = lens_llm
        #: Where ingestion progress lines go (``None``: nowhere, e.g. under ``-q``); set by the pytest layer.
        self.progress: Progress | None = None
        self._slots: dict[tuple[str, int], AdapterSlot] = {}
        self._aliases: dict[str, RefAliases] = {}

    def slot(self, label: str, replica: int = 0) -> AdapterSlot:
        """The adapter slot for ``label`` (instance number ``replica``), constructing the adapter on first use."""
        slot = self._slots.get((label, replica))
        if slot is None:
            slot = self._slots[(label, replica)] = self._construct(self.adapters[label], replica)
        return slot

    def advance(
        self, label: str, scope: LoadedScope, checkpoint: int, replica: int = 0, *, between: Callable[[], object] | None = None
    ) -> list[AdapterFault]:
        """Bring ``label``'s adapter (instance ``replica``) to exactly ``checkpoint`` episodes of ``scope`` and prepare it.

        Returns the faults of the stream this question sees (construction, reset,
        ingest or prepare failures since the scope was last reset). ``between`` is called after
        each episode (a concurrent runner serves the other instances' waiting calls there).
        """
        slot = self.slot(label, replica)
        if slot.caller is None:
            return [slot.construct_fault] if slot.construct_fault else []
        caller = slot.caller
        abandoned = caller.recovered()  # a call of it never ended: a fresh instance, or nothing more is asked of it
        if abandoned is not None:
            return [abandoned]
        restart = slot.scope_id != scope.scope_id or checkpoint < slot.ingested
        if restart:
            faults: list[AdapterFault] = []
            for scope_id in dict.fromkeys(s for s in (slot.scope_id, scope.scope_id) if s is not None):
                try:
                    caller.reset(scope_id)
                except AdapterCallError as exc:
                    faults.append(exc.fault)
            slot.scope_id, slot.ingested, slot.prepared_at, slot.stream_faults = scope.scope_id, 0, None, faults
            slot.scope, slot.prepared = scope, []
        if slot.ingested >= checkpoint and slot.prepared_at == checkpoint:
            return slot.checkpoint_faults()
        with self._progress(label, scope, restart, replica) as stream:
            while slot.ingested < checkpoint:
                episode = scope.stream[slot.ingested]
                slot.ingested += 1
                slot.ingest_calls += 1
                try:
                    caller.ingest(episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, episode.meta)
                except AdapterCallError as exc:
                    slot.stream_faults.append(exc.fault)
                    if caller.abandoned is not None:
                        return [*slot.stream_faults, caller.abandoned]
                if stream is not None and self.progress is not None:
                    self.progress.episode_done(stream)
                if between is not None:
                    between()
            if slot.prepared_at != checkpoint:
                slot.prepared_at = checkpoint
                slot.prepared.append(checkpoint)
                try:
                    caller.prepare(scope.scope_id, checkpoint)
                except AdapterCallError as exc:
                    slot.stream_faults.append(exc.fault)
                    if caller.abandoned is not None:
                        return [*slot.stream_faults, caller.abandoned]
                slot.context, slot.context_fault = fetch_context(caller, scope.scope_id, checkpoint)
        return slot.checkpoint_faults()

    def _progress(self, label: str, scope: LoadedScope, restart: bool, replica: int) -> AbstractContextManager[StreamProgress | None]:
        if self.progress is None or replica:  # extra instances of concurrent runs replay quietly: one line per stream
            return nullcontext()
        # The stream ends at the scope's last checkpoint: episodes after it are never ingested.
        total = min(max(scope.checkpoints, default=len(scope.stream)), len(scope.stream))
        return self.progress.ingesting(label, scope.scope_id, total, restart=restart)

    def manifest(self, label: str) -> tuple[CapabilityManifest, AdapterFault | None]:
        """The adapter's capabilities; a default manifest and the fault if it cannot give them."""
        caller = self.slot(label).caller
        if caller is None:
            return CapabilityManifest(), None
        try:
            return caller.capabilities(), None
        except AdapterCallError as exc:
            return CapabilityManifest(), exc.fault

    def stats_delta(self, label: str, replica: int = 0) -> tuple[dict[str, int], AdapterFault | None]:
        """How much the adapter's ``lens_stats()`` counters grew since the last call (a counter that shrank restarts)."""
        slot = self.slot(label, replica)
        if slot.caller is None or slot.caller.abandoned is not None:
            return {}, None
        try:
            now = slot.caller.stats()
        except AdapterCallError as exc:
            return {}, exc.fault
        before, slot.reported_stats = slot.reported_stats, now
        return {key: value - before.get(key, 0) if value >= before.get(key, 0) else value for key, value in now.items()}, None

    def aliases(self, scope: LoadedScope) -> RefAliases:
        """Ref aliasing for a scope: on when its ids leak labels (``auto``), or as forced."""
        aliases = self._aliases.get(scope.scope_id)
        if aliases is None:
            enabled = self.opaque_refs == "always" or (self.opaque_refs == "auto" and scope.ids_leak_labels)
            aliases = self._aliases[scope.scope_id] = RefAliases(scope.scope_id, (e.episode_id for e in scope.stream), enabled)
        return aliases

    def close(self) -> list[AdapterFault]:
        """Close every adapter and delete their storage; returns close faults (they fail nothing)."""
        faults = []
        for slot in self._slots.values():
            if slot.caller is not None:
                try:
                    slot.caller.close()
                except AdapterCallError as exc:
                    faults.append(exc.fault)
        self._slots.clear()
        shutil.rmtree(self.storage_root, ignore_errors=True)
        return faults

    def _construct(self, spec: AdapterSpec, replica: int) -> AdapterSlot:
        slot = AdapterSlot(spec.label)
        # "@" never occurs in a safe name, so a replica's directory cannot be another adapter's.
        storage = self.storage_root / (safe_name(spec.label) + (f"@{replica}" if replica else ""))
        try:
            # Built on the thread its calls will run on (thread-bound state such as SQLite connections stays usable).
            make = partial(construct_adapter, spec, storage, lens_llm=self.lens_llm)
            slot.caller = AdapterCaller.build(make, spec.label, self.call_timeout)
            slot.caller.recovery = partial(self._rebuild, spec, slot, storage)
        except AdapterUnavailable as exc:
            slot.unavailable = str(exc) or f"adapter {spec.label!r} is unavailable"
        except (Exception, SystemExit) as exc:  # SystemExit too: an adapter must not end the run
            slot.construct_fault = AdapterFault(
                adapter=spec.label, method="__init__", kind="construct", message=f"{type(exc).__name__}: {exc}"
            )
        return slot

    def _rebuild(self, spec: AdapterSpec, slot: AdapterSlot, storage: Path) -> bool:
        """Replace the slot's abandoned instance with a fresh one streamed to the same state; ``False`` when none can be had.

        A call that never ended (it sleeps in C code, or catches the timeout) holds its instance for good; the questions
        queued behind it are answered on a new instance instead, built with the same options (in storage of its own:
        the stuck call may still use the old one) and fed the same episodes, with ``prepare`` at the same checkpoints,
        so they see the state a serial run's instance has. At most :data:`MAX_REBUILDS` per instance: an adapter that
        hangs again and again is given up, its remaining questions failing with the ``abandoned`` fault.
        """
        with slot.rebuilding:
            caller = slot.caller
            if caller is None or caller.abandoned is None:
                return True  # rebuilt meanwhile, by another question's thread
            if slot.rebuilds >= MAX_REBUILDS:
                return False
            slot.rebuilds += 1
            fresh_storage = storage.with_name(f"{storage.name}~{slot.rebuilds}")
            make = partial(construct_adapter, spec, fresh_storage, lens_llm=self.lens_llm)
            try:
                fresh = AdapterCaller.build(make, spec.label, self.call_timeout)
            except (Exception, SystemExit):
                return False
            if not _replay(fresh, slot):
                if fresh.abandoned is None:
                    with contextlib.suppress(AdapterCallError):
                        fresh.close()
                return False
            try:
                slot.reported_stats = fresh.stats() if slot.reported_stats else {}  # the replay is charged to no question
            except AdapterCallError:
                slot.reported_stats = {}
            caller.replace(fresh)
            return True


#: Most instances built to replace abandoned ones, per instance of a stream (see :meth:`LensRuntime._rebuild`).
MAX_REBUILDS = 3


def _replay(fresh: AdapterCaller, slot: AdapterSlot) -> bool:
    """Stream ``fresh`` to ``slot``'s state: its scope's first ``ingested`` episodes, ``prepare`` where it was prepared.

    ``False`` when a call of the replay timed out or was abandoned (the fresh instance is no better). Other faults
    are the stream's own, recorded when it was first streamed.
    """
    scope = slot.scope
    if scope is None or slot.scope_id is None:
        return True
    calls: list[Callable[[], None]] = [partial(fresh.reset, scope.scope_id)]
    for index in range(slot.ingested + 1):
        if index in slot.prepared:
            calls.append(partial(fresh.prepare, scope.scope_id, index))
        if index < slot.ingested:
            episode = scope.stream[index]
            calls.append(partial(fresh.ingest, episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, episode.meta))
    for call in calls:
        try:
            call()
        except AdapterCallError as exc:
            if exc.fault.kind in ("timeout", "abandoned"):
                return False
    return fresh.abandoned is None


def construct_adapter(spec: AdapterSpec, storage: Path, *, lens_llm: Any = None) -> Any:
    """A new instance of ``spec``'s adapter, built with its options.

    An adapter whose ``__init__`` takes ``storage_dir`` (and was not given one)
    gets ``storage``, created on demand; one taking ``lens_llm`` gets the run's
    LLM client (``None`` when no LLM is configured), except an empty-extraction control, whose client the empty
    extractor answers (:mod:`pytest_lens.controls.empty`); a mutant's instance comes wrapped
    in its degradation (:mod:`pytest_lens.controls.mutants`). Raises whatever loading or
    the constructor raises: :class:`AdapterUnavailable` when the adapter cannot
    run here, anything else is a ``construct`` fault for the caller to record.
    """
    cls = load_adapter_class(spec.target)
    options: dict[str, Any] = dict(spec.options)
    if "storage_dir" not in options and accepts_keyword(cls, "storage_dir", via_kwargs=False):
        storage.mkdir(parents=True, exist_ok=True)
        options["storage_dir"] = str(storage)
    if "lens_llm" not in options and accepts_keyword(cls, "lens_llm", via_kwargs=False):
        if spec.control is not None and spec.control.kind == "empty-extraction":
            from pytest_lens.controls.empty import empty_extraction_client

            lens_llm = empty_extraction_client(lens_llm)
        options["lens_llm"] = lens_llm
    adapter = cls(**options)
    if spec.mutation is None:
        return adapter
    from pytest_lens.controls.mutants import mutate

    mutation = spec.mutation
    return mutate(adapter, mutation.name, seed=mutation.seed, freeze_at=dict(mutation.freeze_at))


def safe_name(label: str) -> str:
    """``label`` as a file name (adapter labels may contain ``:`` or ``/``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label) or "adapter"
