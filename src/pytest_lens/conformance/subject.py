"""The adapter under test: a freshly constructed instance per generated example.

Every example starts from a new instance (constructed as a LENS run constructs
it: ``--lens-adapter-option`` options and a private ``storage_dir``), so a clause
fails because of what it exercises and never because an earlier example, or an
earlier clause, left state behind. Calls go through :class:`AdapterCaller`, so
exceptions, wrong return types and hangs become :class:`AdapterCallError` faults
naming the method, and every call's latency is recorded.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from pytest_lens.conformance.samples import SampleEpisode
from pytest_lens.contract.adapter import AdapterUnavailable, CapabilityManifest, Document, SearchResult
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.execution.runner import construct_adapter, safe_name
from pytest_lens.records.results import AdapterFault
from pytest_lens.records.settings import AdapterSpec

__all__ = ["Subject", "SubjectFactory"]


class Subject:
    """One adapter instance, called safely; helpers replay a stream the way the runner does."""

    def __init__(self, caller: AdapterCaller) -> None:
        self.caller = caller

    @property
    def adapter(self) -> Any:
        """The raw adapter instance."""
        return self.caller.adapter

    def load(self, scope_id: str, episodes: Iterable[SampleEpisode], *, reset: bool = True, prepare: bool = True) -> None:
        """``reset(scope)``, ingest every episode in order, then ``prepare(scope, n)`` (the checkpoint)."""
        if reset:
            self.caller.reset(scope_id)
        count = 0
        for episode in episodes:
            self.caller.ingest(episode.episode_id, scope_id, episode.timestamp, episode.text, dict(episode.meta))
            count += 1
        if prepare:
            self.caller.prepare(scope_id, count)

    def reset(self, scope_id: str) -> None:
        """``adapter.reset``."""
        self.caller.reset(scope_id)

    def ingest(self, scope_id: str, episode: SampleEpisode) -> None:
        """``adapter.ingest`` of one sample episode."""
        self.caller.ingest(episode.episode_id, scope_id, episode.timestamp, episode.text, dict(episode.meta))

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """``adapter.prepare`` (skipped when the adapter has none)."""
        self.caller.prepare(scope_id, checkpoint)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """``adapter.search``, results normalised and type-checked."""
        return self.caller.search(query, filters, limit)

    def retrieve(self, ref_id: str) -> Document | None:
        """``adapter.retrieve``, type-checked."""
        return self.caller.retrieve(ref_id)

    def capabilities(self) -> CapabilityManifest:
        """``adapter.get_capabilities``, validated."""
        return self.caller.capabilities()

    def synthetic_refs(self) -> dict[str, str]:
        """Adapter-made documents the agent may cite."""
        return self.caller.synthetic_refs()

    def store_ranking(self, query: str, limit: int | None = None) -> list[str]:
        """The refs the store the adapter wraps ranks for ``query`` (``lens_store_ranking``), in the store's order."""
        return self.caller.store_ranking(query, limit)

    def extended(self, name: str, args: dict[str, Any]) -> Any:
        """``adapter.call_extended_tool``; the result must survive a JSON round trip."""
        return self.caller.extended(name, args)


class SubjectFactory:
    """Constructs fresh instances of one adapter and gathers the latency of every call made on them."""

    def __init__(self, spec: AdapterSpec, storage_root: Path, *, call_timeout: float | None = 120.0, lens_llm: Any = None) -> None:
        self.spec = spec
        self.storage_root = storage_root
        self.call_timeout = call_timeout
        #: The run's LLM client, for adapters whose ``__init__`` takes ``lens_llm``.
        self.lens_llm = lens_llm
        #: Why the adapter cannot run here, when its constructor raised ``AdapterUnavailable``.
        self.unavailable: str | None = None
        #: Seconds per call, by adapter method, over every instance this factory made.
        self.latencies: dict[str, list[float]] = {}
        self.instances = 0
        self._numbers = itertools.count(1)
        self._manifest: tuple[CapabilityManifest, AdapterFault | None] | None = None

    @property
    def label(self) -> str:
        """The adapter's label in reports."""
        return self.spec.label

    @contextmanager
    def fresh(self) -> Iterator[Subject]:
        """A new adapter instance with its own storage directory, closed and deleted afterwards.

        Raises :class:`AdapterCallError` (kind ``construct``) when the adapter cannot be built,
        and when ``close()`` fails after an otherwise successful use; ``AdapterUnavailable``
        (also recorded in :attr:`unavailable`) when the adapter says it cannot run here.
        """
        storage = self.storage_root / f"{safe_name(self.spec.label)}-{next(self._numbers)}"
        try:
            make = partial(construct_adapter, self.spec, storage, lens_llm=self.lens_llm)
            caller = AdapterCaller.build(make, self.spec.label, self.call_timeout)
        except AdapterUnavailable as exc:
            shutil.rmtree(storage, ignore_errors=True)
            self.unavailable = str(exc) or "the adapter is unavailable"
            raise
        except (Exception, SystemExit) as exc:
            shutil.rmtree(storage, ignore_errors=True)
            fault = AdapterFault(adapter=self.spec.label, method="__init__", kind="construct", message=f"{type(exc).__name__}: {exc}")
            raise AdapterCallError(fault) from exc
        self.instances += 1
        failed = False
        try:
            yield Subject(caller)
        except BaseException:
            failed = True
            raise
        finally:
            try:
                caller.close()
            except AdapterCallError:
                if not failed:
                    raise
            finally:
                for method, seconds in caller.latencies.items():
                    self.latencies.setdefault(method, []).extend(seconds)
                shutil.rmtree(storage, ignore_errors=True)

    def defines(self, method: str) -> bool:
        """Whether the adapter's class defines the optional method ``method`` (``False`` when it does not load)."""
        from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class

        try:
            return callable(getattr(load_adapter_class(self.spec.target), method, None))
        except AdapterLoadError:
            return False

    def manifest(self) -> tuple[CapabilityManifest, AdapterFault | None]:
        """The adapter's validated manifest, probed once; the default manifest and the fault when it cannot give one.

        An unavailable adapter gives the default manifest and no fault; :attr:`unavailable` says why.
        """
        if self._manifest is None:
            try:
                with self.fresh() as subject:
                    self._manifest = (subject.capabilities(), None)
            except AdapterCallError as exc:
                self._manifest = (CapabilityManifest(), exc.fault)
            except AdapterUnavailable:
                self._manifest = (CapabilityManifest(), None)
        return self._manifest
