"""Progress lines for long work: ingesting a scope, answering its questions, and exploring a conformance clause.

Plain Python: a :class:`Progress` decides *when* a line is due and *what* it
says, and hands it to a sink (a callable taking one line). The pytest layer
(:mod:`pytest_lens.plugin.terminal_progress`) supplies the sink, or none under ``-q``.

Embedders report what they do through :func:`report_embeddings`, which counts
towards the stream being ingested (and does nothing when no stream is). The
stream being ingested is a context variable, so it reaches the adapter's own
thread, where adapter calls run under ``--lens-call-timeout`` (each call runs
in a copy of the ingesting thread's context). Only the thread that ingests
prints: what the adapter's thread reports is counted, and printed by the
ingesting thread while it waits for the call (every :data:`WAIT_TICK_S`) or
after it. The bundled embedder calls it after every batch, so a long embedding
call still shows progress; an adapter with its own embedder can call it too.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "WAIT_TICK_S",
    "AnsweringProgress",
    "ClauseProgress",
    "ModelLoad",
    "Progress",
    "ProgressSink",
    "StreamProgress",
    "format_stream_line",
    "report_activity",
    "report_embeddings",
    "waiting",
    "waiting_tick",
    "while_ticking",
]

#: Where progress lines go: one call per line, without a trailing newline.
ProgressSink = Callable[[str], None]

T = TypeVar("T")

#: The waiting callback of this thread (:func:`waiting`): thread-local, since only the thread that waits beats.
_ACTIVE = threading.local()
#: The stream being ingested and its :class:`Progress`: a context variable, copied into the thread an adapter call runs on.
_INGESTING: contextvars.ContextVar[tuple[Progress, StreamProgress] | None] = contextvars.ContextVar("lens_ingesting", default=None)

#: Seconds between two :func:`waiting_tick` calls while a thread waits for an adapter call.
WAIT_TICK_S = 1.0


@contextmanager
def waiting(beat: Callable[[], None]) -> Iterator[None]:
    """While the block runs, call ``beat`` from this thread whenever it waits on an adapter call (every :data:`WAIT_TICK_S`)."""
    previous = getattr(_ACTIVE, "beat", None)
    _ACTIVE.beat = beat
    try:
        yield
    finally:
        _ACTIVE.beat = previous


def waiting_tick() -> None:
    """Call the :func:`waiting` callback of this thread, which still waits for an adapter call (no-op without one)."""
    beat: Callable[[], None] | None = getattr(_ACTIVE, "beat", None)
    if beat is not None:
        beat()


def while_ticking(call: Callable[[], T]) -> T:
    """``call()``; where this thread has a :func:`waiting` callback, it beats every :data:`WAIT_TICK_S` meanwhile.

    For a call that blocks in I/O (a model request): it runs on a helper thread, in a copy of this thread's
    context, while this thread waits and beats; its result or exception comes back here. Without a callback it
    runs here, as a plain call.
    """
    if getattr(_ACTIVE, "beat", None) is None:
        return call()
    done = threading.Event()
    outcome: list[Any] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            outcome.append((True, context.run(call)))
        except BaseException as exc:  # handed back to the waiting thread
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="lens-waited-call", daemon=True).start()
    while not done.wait(WAIT_TICK_S):
        waiting_tick()
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    result: T = value
    return result


def report_embeddings(new: int = 0, cached: int = 0) -> None:
    """Count ``new`` texts embedded and ``cached`` texts found in a cache towards the stream now being ingested.

    Safe to call from anywhere: outside an ingestion (a search embedding its
    query, a process without pytest-lens) it does nothing.
    """
    active = _INGESTING.get()
    if active is not None:
        progress, stream = active
        progress.count(stream, new, cached)


def report_activity(text: str) -> None:
    """Say at once what the stream now being ingested waits for (e.g. ``loading the embedding model``).

    For a step that takes long and reports nothing while it runs; outside an
    ingestion it does nothing.
    """
    active = _INGESTING.get()
    if active is not None:
        progress, stream = active
        progress.announce(stream, text)


@dataclass
class StreamProgress:
    """How far one (adapter, scope) stream has been ingested."""

    adapter: str
    scope_id: str
    total: int
    #: The scope was streamed before in this process (a checkpoint went backwards, or scopes interleaved).
    replay: bool = False
    done: int = 0
    embedded: int = 0
    cached: int = 0
    #: Seconds spent ingesting and preparing, up to the last time work paused.
    busy_s: float = 0.0
    #: When the current stretch of work started (``None`` while paused, e.g. while questions are answered).
    resumed_at: float | None = None
    #: Ingestion seconds (:meth:`elapsed`) when the last line was printed (``None``: none yet).
    last_line_at: float | None = None
    #: Episodes done and embeddings new and cached when the last line was printed (a line saying nothing new, such as a
    #: line while an adapter call waits on a model that loads, is never printed).
    last_line_counts: tuple[int, int, int] = (-1, 0, 0)
    finished: bool = False
    #: The thread ingesting it now (the only one that prints its lines), while it is.
    owner: int | None = None
    #: What another thread announced (:func:`report_activity`) and when (ingestion seconds), not printed yet.
    pending: tuple[str, float] | None = None

    def elapsed(self, now: float) -> float:
        """Seconds of ingestion work so far, the current stretch included."""
        return self.busy_s + (now - self.resumed_at if self.resumed_at is not None else 0.0)

    def counts(self) -> tuple[int, int, int]:
        """Episodes done, texts embedded, texts found in a cache."""
        return self.done, self.embedded, self.cached


def format_stream_line(stream: StreamProgress, elapsed: float) -> str:
    """One progress line: episodes done, embeddings new and cached, time so far and an estimate of what is left."""
    what = "replaying" if stream.replay else "ingesting"
    parts = [f"lens: {stream.adapter} | {stream.scope_id}: {what} {stream.done}/{stream.total} episodes"]
    if stream.embedded or stream.cached:
        parts.append(f"embeddings {stream.embedded} new + {stream.cached} cached")
    parts.append(f"{elapsed:.1f} s")
    if stream.done >= stream.total:
        parts.append("done")
    elif stream.done:
        parts.append(f"~{elapsed / stream.done * (stream.total - stream.done):.0f} s to go")
    else:
        parts.append("estimate after the first episodes")
    return ", ".join(parts)


class Progress:
    """Progress of the streams this process ingests.

    A stream's first line is printed as soon as its work starts; further lines at
    most every ``interval_s`` while work goes on (between episodes or embedding
    batches, and while the ingesting thread waits for an adapter call), each only
    when episodes or embeddings moved since the last; a last line when the scope is
    complete (its last ``prepare`` included), if ingesting it took longer than
    ``interval_s`` (fast adapters print one line per scope). What the adapter's
    own thread reports is printed by the thread that ingests.
    """

    def __init__(self, sink: ProgressSink, *, interval_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.interval_s = interval_s
        self.clock = clock
        self._streams: dict[tuple[str, str], StreamProgress] = {}
        self._lock = threading.Lock()

    @contextmanager
    def ingesting(self, adapter: str, scope_id: str, total: int, *, restart: bool) -> Iterator[StreamProgress]:
        """A stretch of ingestion work on ``(adapter, scope_id)``; ``restart`` when the runner just reset the scope."""
        key = (adapter, scope_id)
        with self._lock:
            stream = self._streams.get(key)
            if stream is None or restart:
                stream = self._streams[key] = StreamProgress(adapter, scope_id, total, replay=stream is not None)
        now = self.clock()
        stream.resumed_at = now
        stream.owner = threading.get_ident()
        if stream.last_line_at is None:
            self._emit(stream, now)
        token = _INGESTING.set((self, stream))
        try:
            with waiting(lambda: self.tick(stream)):  # lines while this thread waits for an adapter call
                yield stream
        finally:
            _INGESTING.reset(token)
            stream.owner, stream.pending = None, None  # an announcement no tick printed is over: the call ended
            now = self.clock()
            stream.busy_s = stream.elapsed(now)
            stream.resumed_at = None
            if stream.done >= stream.total and not stream.finished:
                stream.finished = True
                if stream.busy_s >= self.interval_s and self._news(stream):
                    self._emit(stream, now)

    def episode_done(self, stream: StreamProgress) -> None:
        """One more episode ingested."""
        stream.done += 1
        self.tick(stream)

    def count(self, stream: StreamProgress, new: int, cached: int) -> None:
        """``new`` texts embedded and ``cached`` found in a cache, from any thread; a line if one is due here."""
        with self._lock:
            stream.embedded += new
            stream.cached += cached
        self.tick(stream)

    def tick(self, stream: StreamProgress) -> None:
        """On the ingesting thread: print what another thread announced, else a line if the last one is ``interval_s`` old."""
        if threading.get_ident() != stream.owner:
            return  # another thread (the adapter's): the ingesting thread prints, while it waits or after the call
        with self._lock:
            pending, stream.pending = stream.pending, None
        if pending is not None:
            self._announce(stream, *pending)
            return
        if stream.done >= stream.total:
            return  # its last line comes when the stretch ends, with what prepare() embedded after the last episode
        now = self.clock()
        # Measured in ingestion time: the minutes spent answering questions between checkpoints do not count.
        if stream.last_line_at is None or (stream.elapsed(now) - stream.last_line_at >= self.interval_s and self._news(stream)):
            self._emit(stream, now)

    def announce(self, stream: StreamProgress, text: str) -> None:
        """A line about what the stream is doing now: printed at once on the ingesting thread, else at its next tick."""
        elapsed = stream.elapsed(self.clock())
        if threading.get_ident() == stream.owner:
            self._announce(stream, text, elapsed)
            return
        with self._lock:
            stream.pending = (text, elapsed)

    def _announce(self, stream: StreamProgress, text: str, elapsed: float) -> None:
        stream.last_line_at = elapsed
        self.sink(f"lens: {stream.adapter} | {stream.scope_id}: {text} ({elapsed:.1f} s)")

    def _news(self, stream: StreamProgress) -> bool:
        """Whether episodes or embeddings moved since the last line."""
        with self._lock:
            return stream.counts() != stream.last_line_counts

    def _emit(self, stream: StreamProgress, now: float) -> None:
        stream.last_line_at = stream.elapsed(now)
        with self._lock:
            stream.last_line_counts = stream.counts()
            line = format_stream_line(stream, stream.last_line_at)
        self.sink(line)


class ClauseProgress:
    """Progress of one conformance clause: quiet for ``after_s``, then a line at most every ``interval_s``."""

    def __init__(
        self,
        sink: ProgressSink,
        clause: str,
        adapter: str,
        max_examples: int,
        *,
        after_s: float = 2.0,
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink = sink
        self.clause = clause
        self.adapter = adapter
        self.max_examples = max_examples
        self.after_s = after_s
        self.interval_s = interval_s
        self.clock = clock
        self.started = clock()
        self._last: float | None = None
        self._number = 0
        self._example_started = self.started

    def example(self, number: int) -> None:
        """Example ``number`` (1-based) is about to run; hypothesis may run more than ``max_examples`` while shrinking."""
        self._number = number
        self._example_started = self.clock()
        self._line("")

    def beat(self) -> None:
        """The clause still waits for an adapter call: a line if one is due, saying how long this example has run."""
        if self._number:
            self._line(f", this example for {self.clock() - self._example_started:.0f} s")

    def _line(self, detail: str) -> None:
        now = self.clock()
        elapsed = now - self.started
        if elapsed < self.after_s or (self._last is not None and now - self._last < self.interval_s):
            return
        self._last = now
        number = self._number
        phase = f"example {number} of {self.max_examples}" if number <= self.max_examples else f"example {number} (shrinking or replaying)"
        self.sink(f"lens conformance: {self.clause} [{self.adapter}]: {phase}{detail}, {elapsed:.1f} s")


@dataclass(frozen=True)
class ModelLoad:
    """What the model has done so far in this process, for answering progress lines."""

    #: Completions answered (sent and come back).
    requests: int = 0
    #: Tokens the server said it generated.
    completion_tokens: int = 0
    #: Requests the server is working on now, and requests waiting for a free place (queued here).
    in_flight: int = 0
    waiting: int = 0


class AnsweringProgress:
    """Lines while the questions of a stream are answered: questions answered, in flight and queued, the model's rate.

    Quiet for the first ``interval_s`` (fast runs print nothing), then a line at most every ``interval_s``, and a
    last one when the stream's questions are done if any line was printed. ``load`` reads the model's counters
    (requests and tokens so far, requests in flight and waiting); rates are over the stream's time so far. Without
    ``load`` (a run that uses no model, e.g. the offline agent) the line says nothing about a model.
    """

    def __init__(
        self,
        sink: ProgressSink,
        *,
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        load: Callable[[], ModelLoad] | None = None,
    ) -> None:
        self.sink = sink
        self.interval_s = interval_s
        self.clock = clock
        self.load = load
        self._label = ""
        self._total = 0
        self._started = 0.0
        self._base = ModelLoad()
        self._last: float | None = None

    def start(self, adapter: str, scope_id: str, total: int) -> None:
        """The questions of ``(adapter, scope_id)`` start being answered: ``total`` of them."""
        self._label = f"{adapter} | {scope_id}"
        self._total = total
        self._started = self.clock()
        self._base = self.load() if self.load is not None else ModelLoad()
        self._last = None

    def tick(self, answered: int, running: int, *, final: bool = False) -> None:
        """``answered`` questions done and ``running`` being answered; a line if one is due (or the last, when ``final``)."""
        now = self.clock()
        elapsed = now - self._started
        if final:
            if self._last is None:
                return
        elif elapsed < self.interval_s or (self._last is not None and now - self._last < self.interval_s):
            return
        self._last = now
        self.sink(self.line(answered, running, elapsed))

    def line(self, answered: int, running: int, elapsed: float) -> str:
        """The progress line for these counts after ``elapsed`` seconds."""
        queued = max(0, self._total - answered - running)
        parts = [f"lens: {self._label}: answering {answered}/{self._total} questions done, {running} in flight, {queued} queued"]
        if self.load is not None:
            load = self.load()
            requests = load.requests - self._base.requests
            tokens = load.completion_tokens - self._base.completion_tokens
            rate = max(elapsed, 1e-9)
            parts += [
                f"model: {load.in_flight} requests being served, {load.waiting} waiting for a free place",
                f"{requests} answered ({requests / rate:.2f}/s), {tokens:,} tokens generated ({tokens / rate:.1f}/s)",
            ]
        parts.append(f"{elapsed:.0f} s")
        if answered >= self._total:
            parts.append("done")
        elif answered:
            parts.append(f"~{elapsed / answered * (self._total - answered):.0f} s to go")
        else:
            parts.append("estimate after the first answers")
        return ", ".join(parts)
