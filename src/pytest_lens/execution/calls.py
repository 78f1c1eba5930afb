"""Calling an adapter safely: exceptions, wrong return types and hangs become :class:`AdapterFault`.

Every adapter call of a run goes through :class:`AdapterCaller`, so a broken
adapter fails the one question it broke (naming adapter and method) and never
the session.
"""

from __future__ import annotations

import contextvars
import copy
import ctypes
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from pytest_lens.contract.adapter import CapabilityManifest, Document, SearchResult
from pytest_lens.contract.checks import as_counters, as_document, as_search_results, optional_text, validate_manifest
from pytest_lens.execution import watchdog
from pytest_lens.execution.deadline import CallClock, running_on
from pytest_lens.llm.limiter import outside_question
from pytest_lens.records.results import AdapterFault

__all__ = [
    "INTERRUPTED",
    "SIGNALS_WATCHED",
    "AdapterCallError",
    "AdapterCaller",
    "AdapterThread",
    "guard_process_exit",
]


T = TypeVar("T")

#: Set by the run's SIGINT/SIGTERM handler (:mod:`pytest_lens.plugin.signals`) when the user interrupts the run.
INTERRUPTED = threading.Event()
#: Whether that handler is installed, so that a ``KeyboardInterrupt`` without it can be told to be an adapter's.
SIGNALS_WATCHED = threading.Event()
_inside = threading.local()
_real_exit = os._exit
_owner_pid = os.getpid()


class _ProcessExit(SystemExit):
    """``os._exit`` called inside an adapter call: a fault, not the end of the run (see :func:`guard_process_exit`)."""


class _AdapterInterrupt(BaseException):
    """A ``KeyboardInterrupt`` an adapter raised itself (not the user's Ctrl-C): a fault."""


def _in_adapter_call() -> bool:
    return getattr(_inside, "depth", 0) > 0


def _calling(thunk: Callable[[], T]) -> T:
    """Run ``thunk`` (an adapter call) marked as one, for :func:`guard_process_exit`.

    Model requests the adapter makes are its own, not the asking question's (:func:`outside_question`): a question
    that holds a seat at the server may wait on this call, so the call must not wait for a seat itself.
    """
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        with outside_question():
            return thunk()
    finally:
        _inside.depth -= 1


def _guarded_exit(status: int) -> NoReturn:
    if _in_adapter_call() and os.getpid() == _owner_pid:
        raise _ProcessExit(status)
    _real_exit(status)


def guard_process_exit() -> Callable[[], None]:
    """While a run is active: ``os._exit`` called inside an adapter call is an ``exception`` fault of that call.

    Ending the process from an adapter ended a run with exit status 0 and no artifact, and a CI gate passed. A
    forked child (another process id) and code outside adapter calls still exit at once. Returns the undo.
    """
    global _owner_pid
    _owner_pid = os.getpid()
    os._exit = _guarded_exit

    def restore() -> None:
        os._exit = _real_exit

    return restore


class AdapterCallError(Exception):
    """An adapter call failed; ``fault`` describes how."""

    def __init__(self, fault: AdapterFault) -> None:
        self.fault = fault
        super().__init__(fault.describe())


class _CallTimeout(BaseException):
    """A call outlived ``--lens-call-timeout``; raised inside it too, a BaseException so ``except Exception`` cannot swallow it."""


class AdapterCaller:
    """Calls one adapter instance with fault capture, return-type checks and a per-call timeout.

    With a timeout, every call runs on the adapter's own :class:`AdapterThread` (where :meth:`build` also
    constructs it), and the calling thread waits for it until the timeout: a call that outlives it is a
    ``timeout`` fault. The timeout is raised inside the call too (as ``SIGALRM`` was); a call that does not
    end even then (it catches ``BaseException``, or sleeps in C) is abandoned, running, and the adapter instance
    with it: later calls go to a fresh instance rebuilt in the same state (:attr:`recovery`, set by the runtime that
    streamed it), or, when none can be had, are refused with an ``abandoned`` fault; the run goes on. ``SystemExit`` raised by
    an adapter is an ``exception`` fault. Adapter state is never touched from another thread unless the
    adapter declares itself thread-safe (:func:`~pytest_lens.contract.adapter.declares_thread_safe`): many adapters
    hold SQLite connections bound to the thread that opened them. Questions answered on worker threads
    reach other adapters through a :meth:`via` view that hands every call to the thread owning the adapter.
    """

    def __init__(self, adapter: Any, label: str, timeout_s: float | None = None, *, home: AdapterThread | None = None) -> None:
        self.label = label
        self.timeout_s = timeout_s if timeout_s and timeout_s > 0 else None
        #: The instance called and the thread it is called on, shared by every view of this caller (and replaced
        #: together when an abandoned instance is rebuilt, see :attr:`recovery`).
        self._instance = _Instance((adapter, home if home is not None else AdapterThread(f"lens-adapter-{label}")))
        #: Seconds spent per method, for latency reports.
        self.latencies: dict[str, list[float]] = {}
        self._dispatch: Callable[[Callable[[], Any]], Any] | None = None
        self._offload_timeouts = False
        #: What a :meth:`scoped` view calls instead of the instance (one question's view of it).
        self._scope: Callable[[Any], Any] | None = None

    @classmethod
    def build(cls, make: Callable[[], Any], label: str, timeout_s: float | None = None) -> AdapterCaller:
        """Construct an adapter with ``make()`` on the thread its calls will run on, and a caller for it.

        Raises what ``make`` raises. Construction is not timed (models load there); with no timeout
        there is no adapter thread, and the adapter is built and called on the calling thread.
        """
        home = AdapterThread(f"lens-adapter-{label}")
        if timeout_s is None or timeout_s <= 0:
            return cls(make(), label, timeout_s, home=home)
        try:
            adapter = home.run(_Call(make, CallClock(None)), lambda why: _interrupted(label, why))
        except BaseException:
            home.stop()  # no adapter to call: let its thread end
            raise
        return cls(adapter, label, timeout_s, home=home)

    # -- views for concurrent questions ----------------------------------------------------
    def via(self, dispatch: Callable[[Callable[[], Any]], Any]) -> AdapterCaller:
        """A view whose calls run through ``dispatch`` (e.g. on the thread that owns the adapter).

        ``dispatch`` receives a thunk performing the whole call (timeout, fault capture, latency)
        and returns its result or raises what it raised. The view shares the adapter and latencies.
        """
        view = copy.copy(self)
        view._dispatch = dispatch
        return view

    def concurrent(self) -> AdapterCaller:
        """A view for a thread-safe adapter called from worker threads: the per-call timeout still holds.

        Calls made off the main thread run each on a thread of its own (they overlap), given up alone
        (a ``timeout`` fault) when they outlive ``--lens-call-timeout``.
        """
        view = copy.copy(self)
        view._offload_timeouts = True
        return view

    def scoped(self, scope: Callable[[Any], Any]) -> AdapterCaller:
        """A view calling ``scope(instance)`` instead of the instance, on the same thread and clock.

        The harness's own controls use it: the oracle's instance gives each question a view that knows the
        question's required evidence (:mod:`pytest_lens.controls.plan`). The view shares everything else.
        """
        view = copy.copy(self)
        view._scope = scope
        return view

    @property
    def adapter(self) -> Any:
        """The adapter instance called (a fresh one once an abandoned instance was rebuilt; a view of it when :meth:`scoped`)."""
        instance = self._instance.current[0]
        return instance if self._scope is None else self._scope(instance)

    @property
    def _home(self) -> AdapterThread:
        return self._instance.current[1]

    @property
    def recovery(self) -> Callable[[], bool] | None:
        """Rebuilds an abandoned instance in the state the abandoned one had (``True`` once it did); ``None``: never.

        Set by the runtime that owns the instance (:class:`~pytest_lens.execution.runner.LensRuntime`), which knows
        which episodes to replay; it calls :meth:`replace` with the rebuilt caller.
        """
        return self._instance.recovery

    @recovery.setter
    def recovery(self, rebuild: Callable[[], bool] | None) -> None:
        self._instance.recovery = rebuild

    def replace(self, fresh: AdapterCaller) -> None:
        """From now on, this caller and every view of it call ``fresh``'s instance (on its thread)."""
        self._instance.current = fresh._instance.current  # one assignment: no view sees one half of each

    def recovered(self) -> AdapterFault | None:
        """``None`` when the instance can be called (rebuilt first if it was abandoned); else why it cannot."""
        abandoned = self._home.abandoned
        if abandoned is None:
            return None
        rebuild = self.recovery
        if rebuild is not None and not INTERRUPTED.is_set() and rebuild():
            return self._home.abandoned
        return abandoned

    @property
    def has_stats(self) -> bool:
        """Whether the adapter reports counters (a ``lens_stats`` other than the base class's empty one)."""
        from pytest_lens.contract.adapter import MemoryAdapter

        method = getattr(type(self.adapter), "lens_stats", None)
        return method is not None and method is not MemoryAdapter.lens_stats

    # -- runner-side methods -------------------------------------------------------------
    def reset(self, scope_id: str) -> None:
        """``adapter.reset``."""
        self._call("reset", lambda: self.adapter.reset(scope_id))

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any]) -> None:
        """``adapter.ingest`` (a private copy of ``meta``, so adapters cannot alter the dataset)."""
        self._call("ingest", lambda: self.adapter.ingest(episode_id, scope_id, timestamp, text, dict(meta)), episode_id=episode_id)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """``adapter.prepare`` when the adapter defines it."""
        prepare = getattr(self.adapter, "prepare", None)
        if prepare is not None:
            self._call("prepare", lambda: prepare(scope_id, checkpoint))

    # -- agent-side methods ----------------------------------------------------------------
    def search(self, query: str, filters: dict[str, Any] | None, limit: int | None, *, strict: bool = False) -> list[SearchResult]:
        """``adapter.search``, results normalised to :class:`SearchResult`.

        ``strict`` (a run's calls): more results than ``limit`` is a ``bad_return`` fault. Without it they are
        returned as they came, for the conformance suite's ``search.limit`` clause to judge.
        """
        raw = self._call("search", lambda: self.adapter.search(query, filters, limit))
        return self._checked("search", lambda: as_search_results(raw, limit if strict else None))

    def retrieve(self, ref_id: str, *, strict: bool = False) -> Document | None:
        """``adapter.retrieve``, normalised to :class:`Document` or ``None``.

        ``strict`` (a run's calls): a document with another ``ref_id`` than the one asked for is a ``bad_return``
        fault. Without it the document is returned as it came, for the conformance suite's ``retrieve.*`` clauses.
        """
        raw = self._call("retrieve", lambda: self.adapter.retrieve(ref_id))
        return self._checked("retrieve", lambda: None if raw is None else as_document(raw, ref_id if strict else None))

    def capabilities(self) -> CapabilityManifest:
        """``adapter.get_capabilities``, validated."""
        raw = self._call("get_capabilities", self.adapter.get_capabilities)
        return self._checked("get_capabilities", lambda: validate_manifest(raw))

    def extended(self, name: str, args: dict[str, Any]) -> Any:
        """``adapter.call_extended_tool``; the result must survive a JSON round trip."""
        method = getattr(self.adapter, "call_extended_tool", None)
        if method is None:
            raise AdapterCallError(
                self._fault(
                    "call_extended_tool", "bad_return", f"the manifest declares {name!r} but the adapter has no call_extended_tool()"
                )
            )
        raw = self._call("call_extended_tool", lambda: method(name, args))
        return self._checked("call_extended_tool", lambda: json.loads(json.dumps(raw, default=_jsonable)))

    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """``adapter.context`` when the adapter defines it: the block for the agent's prompt, or ``None``."""
        method = getattr(self.adapter, "context", None)
        if method is None:
            return None
        raw = self._call("context", lambda: method(scope_id, checkpoint))
        return self._checked("context", lambda: optional_text(raw))

    def synthetic_refs(self) -> dict[str, str]:
        """Adapter-made documents the agent may cite, ``ref_id -> text``."""
        method = getattr(self.adapter, "get_synthetic_refs", None)
        if method is None:
            return {}
        raw = self._call("get_synthetic_refs", method)
        return self._checked("get_synthetic_refs", lambda: {str(ref): str(text) for ref, text in raw})

    def store_ranking(self, query: str, limit: int | None) -> list[str]:
        """``adapter.lens_store_ranking``: the refs the store the adapter wraps ranks for ``query``, in the store's order."""
        method = getattr(self.adapter, "lens_store_ranking", None)
        if method is None:
            raise AdapterCallError(self._fault("lens_store_ranking", "bad_return", "the adapter has no lens_store_ranking()"))
        raw = self._call("lens_store_ranking", lambda: method(query, limit))
        return self._checked("lens_store_ranking", lambda: _ref_list(raw))

    def stats(self) -> dict[str, int]:
        """``adapter.lens_stats()`` when defined: cumulative integer counters (e.g. embedding-cache hits)."""
        method = getattr(self.adapter, "lens_stats", None)
        if method is None:
            return {}
        raw = self._call("lens_stats", method)
        return self._checked("lens_stats", lambda: as_counters(raw))

    def close(self) -> None:
        """``adapter.close`` when defined (not for an abandoned adapter: its call still runs), then let its thread end."""
        if self._home.abandoned is not None:
            return
        close = getattr(self.adapter, "close", None)
        try:
            if close is not None:
                self._call("close", close)
        finally:
            self._home.stop()

    # -- machinery -------------------------------------------------------------------------
    @property
    def abandoned(self) -> AdapterFault | None:
        """Why this adapter instance is no longer called (a call outlived the timeout and never ended), or ``None``."""
        return self._home.abandoned

    def _call(self, method: str, thunk: Callable[[], T], episode_id: str | None = None) -> T:
        for _ in range(2):
            abandoned = self.recovered()
            if abandoned is not None:
                raise AdapterCallError(abandoned)
            home = self._home
            try:
                dispatch = self._dispatch
                if dispatch is not None:
                    result: T = dispatch(lambda: self._timed(method, thunk, episode_id))
                    return result
                return self._timed(method, thunk, episode_id)
            except AdapterCallError as exc:
                # Queued behind a call that was abandoned meanwhile, this one was never made: once more, on a rebuilt
                # instance if one can be had. (The call that hung has its own ``timeout`` fault.)
                if exc.fault.kind != "abandoned" or exc.fault is not home.abandoned or self.recovery is None:
                    raise
        raise AdapterCallError(self._home.abandoned or self._fault(method, "abandoned", STUCK))

    def _timed(self, method: str, thunk: Callable[[], T], episode_id: str | None) -> T:
        started = time.perf_counter()
        try:
            return self._run(method, thunk)
        except _CallTimeout:
            raise AdapterCallError(
                self._fault(method, "timeout", f"no answer after {self.timeout_s:g} s (--lens-call-timeout)", episode_id)
            ) from None
        except AdapterCallError:
            raise
        except _ProcessExit as exc:
            raise AdapterCallError(
                self._fault(method, "exception", f"os._exit({exc.code!r}): the adapter tried to end the process", episode_id)
            ) from None
        except SystemExit as exc:  # an adapter must not end the run: its question fails, the run goes on
            raise AdapterCallError(
                self._fault(method, "exception", f"SystemExit({exc.code!r}): the adapter tried to end the process", episode_id)
            ) from None
        except _AdapterInterrupt:
            raise AdapterCallError(self._fault(method, "exception", "KeyboardInterrupt raised by the adapter", episode_id)) from None
        except KeyboardInterrupt:
            if INTERRUPTED.is_set() or not SIGNALS_WATCHED.is_set():
                raise  # the user's Ctrl-C (or SIGTERM): the run stops, as it should
            raise AdapterCallError(self._fault(method, "exception", "KeyboardInterrupt raised by the adapter", episode_id)) from None
        except Exception as exc:
            raise AdapterCallError(self._fault(method, "exception", f"{type(exc).__name__}: {exc}", episode_id)) from exc
        finally:
            self.latencies.setdefault(method, []).append(time.perf_counter() - started)

    def _run(self, method: str, thunk: Callable[[], T]) -> T:
        """``thunk`` under the call timeout, on the adapter's thread (a thread-safe adapter's concurrent calls: one each)."""
        if self.timeout_s is None:
            return _calling(thunk)
        call = _Call(thunk, CallClock(self.timeout_s), self.label, method)
        if self._offload_timeouts and threading.current_thread() is not threading.main_thread():
            result: T = call.on_new_thread(f"lens-adapter-{self.label}-{method}")  # they overlap: each abandoned alone
            return result
        outcome: T = self._home.run(call, lambda why: self._abandoned(method, why))
        return outcome

    def _abandoned(self, method: str, why: str) -> AdapterFault:
        timeout = f"--lens-call-timeout ({self.timeout_s:g} s)"
        return self._fault(method, "abandoned", f"{why}; it outlived {timeout}, is left running, and no further call is made")

    def _fault(self, method: str, kind: str, message: str, episode_id: str | None = None) -> AdapterFault:
        return AdapterFault(adapter=self.label, method=method, kind=kind, message=message, episode_id=episode_id)  # type: ignore[arg-type]

    def _checked(self, method: str, convert: Callable[[], T]) -> T:
        try:
            return convert()
        except (TypeError, ValueError) as exc:
            raise AdapterCallError(self._fault(method, "bad_return", str(exc))) from None


#: How long a timed-out call is given to end once the timeout is raised inside it, before its adapter is abandoned.
ABANDON_GRACE_S = 1.0
#: Why an adapter is abandoned: its call outlived the timeout and did not end when the timeout was raised inside it.
STUCK = "the call did not end when its timeout was raised inside it (the adapter catches BaseException, or waits in C code)"


class _Call:
    """One adapter call handed to another thread: the thunk, its clock, and how it ended."""

    def __init__(self, thunk: Callable[[], Any], clock: CallClock, adapter: str = "", method: str = "__init__") -> None:
        self.thunk = thunk
        self.clock = clock
        self.adapter = adapter
        self.method = method
        self.context = contextvars.copy_context()  # LLM requests made inside count for the question that asked
        self.thread_id: int | None = None
        self.value: Any = None
        self.error: BaseException | None = None
        #: Whether the call outlived its clock (it may have ended since, once the timeout was raised inside it).
        self.late = False

    def run(self) -> None:
        """On the thread that makes the call."""
        self.thread_id = threading.get_ident()
        try:
            with running_on(self.clock):
                self.value = self.context.run(_calling, self.thunk)
        except KeyboardInterrupt as exc:  # signals reach the main thread only: on this one, the adapter raised it
            self.error = _AdapterInterrupt() if threading.current_thread() is not threading.main_thread() else exc
        except BaseException as exc:  # handed back to the waiting thread, whatever it is
            self.error = exc
        finally:
            self.clock.finish()

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value

    def wait(self) -> bool:
        """Wait for the call; ``False`` when it outlived its clock and did not end once the timeout was raised inside it.

        Meanwhile the watchdog (:mod:`~pytest_lens.execution.watchdog`) ends the run should the call hold the GIL past
        its timeout and grace: then no thread of this process, this one included, can run to give up on it.
        """
        with watchdog.watching(self.clock.timeout_s, ABANDON_GRACE_S, self.adapter, self.method):
            if self.clock.wait():
                return True
            self.late = True
            self.clock.unless_finished(self._raise_inside)
            return self.clock.wait_more(ABANDON_GRACE_S)

    def _raise_inside(self) -> None:
        """As ``SIGALRM`` did: a Python loop that does not catch BaseException ends (a C call ends first)."""
        if self.thread_id is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), ctypes.py_object(_CallTimeout))

    def on_new_thread(self, name: str) -> Any:
        """Run the call on a new daemon thread; :class:`_CallTimeout` when it outlives its clock (the thread is left to it)."""
        threading.Thread(target=self.run, name=name, daemon=True).start()
        if not self.wait() or self.late:
            raise _CallTimeout
        return self.outcome()


@dataclass
class _Instance:
    """An adapter instance, the thread it is called on, and how to rebuild it once abandoned (see :class:`AdapterCaller`)."""

    #: The instance and its thread, replaced together.
    current: tuple[Any, AdapterThread]
    recovery: Callable[[], bool] | None = None


class AdapterThread:
    """The one thread an adapter instance is called on, so that a call outliving its timeout can be abandoned.

    The adapter is built on it too (:meth:`AdapterCaller.build`): state bound to the thread that made it, such as
    SQLite connections, stays usable. Started on first use; daemon, so an abandoned call never holds up the
    interpreter's exit.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        #: Why no further call is made (a call outlived the timeout and did not end, or the wait for it was interrupted).
        self.abandoned: AdapterFault | None = None
        self._inbox: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._one_at_a_time = threading.Lock()
        self._thread: threading.Thread | None = None

    def run(self, call: _Call, abandon: Callable[[str], AdapterFault]) -> Any:
        """Make ``call`` on this thread and return its result; :class:`_CallTimeout` when it outlives its clock.

        A call that does not end even then is left running and the adapter abandoned: ``abandon(why)`` is the
        fault every later call is refused with.
        """
        with self._one_at_a_time:
            if self.abandoned is not None:
                raise AdapterCallError(self.abandoned)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
            self._inbox.put(call)
            try:
                ended = call.wait()
            except BaseException:  # interrupted (Ctrl-C) while the adapter works: it is left to itself
                self.abandoned = abandon("the run was interrupted during this call")
                raise
            if not ended:
                self.abandoned = abandon(STUCK)
                raise _CallTimeout
            if call.late:  # it ended once the timeout was raised inside it: a timeout, and the adapter is still usable
                raise _CallTimeout
            return call.outcome()

    def stop(self) -> None:
        """Let the thread end once it is idle."""
        with self._one_at_a_time:
            if self._thread is not None and self.abandoned is None:
                self._inbox.put(None)
                self._thread = None

    def _serve(self) -> None:
        while True:
            try:
                call = self._inbox.get()
                if call is None:
                    return
                call.run()
            except _CallTimeout:  # raised inside a call just as it ended: nothing left to interrupt
                continue


def _ref_list(raw: Any) -> list[str]:
    if not isinstance(raw, list | tuple) or not all(isinstance(ref, str) for ref in raw):
        raise TypeError(f"lens_store_ranking() must return a list of ref ids (str), got {type(raw).__name__}: {raw!r:.200}")
    return list(raw)


def _interrupted(label: str, why: str) -> AdapterFault:
    return AdapterFault(adapter=label, method="__init__", kind="abandoned", message=why)


def _jsonable(value: Any) -> Any:
    """Let dataclass results (Document, SearchResult) of extra tools serialise."""
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    raise TypeError(f"extra tool returned a non-JSON value of type {type(value).__name__}")
