"""Answering questions concurrently (``--lens-concurrency``), with results equal to a serial run.

Every question of one (adapter, scope) at checkpoint N sees the same memory state: the first
N episodes, whatever its budget. So when pytest runs the first question of a stream, :class:`ConcurrentRunner`
answers all the questions of that stream selected for this process (:meth:`~ConcurrentRunner.plan`),
checkpoint by checkpoint, on a pool of worker threads, and keeps their results; each
pytest item then reports its own. How the work is shared:

- The adapter is streamed by the thread that owns it (pytest's). Every instance is called on
  its own thread (:class:`~pytest_lens.execution.calls.AdapterThread`, where it was built), one call at a
  time, with ``--lens-call-timeout`` intact: a question's worker thread hands its adapter calls
  to that thread directly, one question's call at a time per instance, so instances at different
  checkpoints answer at once. Without a call timeout there is no such thread, and the owning
  thread runs every adapter call the agents make (:class:`~pytest_lens.execution.dispatch.OwnerThreadCalls`).
  An adapter declaring ``lens_thread_safe`` is called straight from the worker threads.
- A checkpoint's questions are answered concurrently; the adapter moves on to the next
  checkpoint as soon as all of them are *answered*: judging and the naive baseline need no
  adapter, so they overlap with the next checkpoint's answers.
- Checkpoints are streamed to one round ahead: while the questions launched so far number fewer
  than twice the concurrency, the next checkpoint is streamed (on an idle instance) and its
  questions queue for a thread, so when a thread frees up its next question is ready instead of
  waiting for an instance to be streamed (most of the gap between rounds, measured). Streaming
  starts only once no adapter call of a running question waits
  (:meth:`~pytest_lens.execution.dispatch.OwnerThreadCalls.when_idle`), and serves the calls that arrive
  meanwhile between episodes (:meth:`~pytest_lens.execution.dispatch.OwnerThreadCalls.serve_waiting`), so
  running questions are not held up behind it.
- An adapter declaring ``lens_isolated_instances`` gets up to :data:`MAX_INSTANCES` instances
  (replicas) per stream, so later checkpoints are answered while earlier ones still are. Each
  replica replays the stream exactly as one instance answering every checkpoint in order would
  (ingest, and ``prepare`` at every selected checkpoint on the way), so each question sees
  the same state as in a serial run.

Results equal a serial run's, timing aside: each question has its own budget tracker and tool
bridge, seeds and judge positions depend on the question only, LLM requests are counted per
question (:func:`~pytest_lens.llm.stats.counting`), and adapter counters (``lens_stats``) are
measured after every call, under the instance's lock, so each question is charged for its own
calls and the first question of each checkpoint for streaming the adapter there, as serially.
Two differences, both documented: a thread-safe adapter's counters for a checkpoint are all
charged to its first question (its calls overlap, so they cannot be told apart), and the work
of streaming extra replicas past checkpoints they do not answer is charged to no question.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pytest_lens.agents.base import Agent
from pytest_lens.answering.engine import answer_case, score_case, skipped_result
from pytest_lens.contract.adapter import declares_isolated_instances, declares_thread_safe
from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.execution.bridge import RefAliases
from pytest_lens.execution.calls import AdapterCaller
from pytest_lens.execution.dispatch import OwnerThreadCalls
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.limiter import in_order
from pytest_lens.llm.stats import LLMCounts, counting
from pytest_lens.progress import AnsweringProgress
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import AdapterFault, MemoryContext, QuestionResult
from pytest_lens.scoring.scorer import Scoring

__all__ = ["MAX_INSTANCES", "ConcurrentRunner"]

#: Most instances of one adapter (declaring ``lens_isolated_instances``) a stream uses at once.
MAX_INSTANCES = 4
#: Rounds of questions (``concurrency`` each) streamed to and queued beyond those with a thread.
LOOKAHEAD_ROUNDS = 1

CaseKey = tuple[str | int, ...]
Outcome = QuestionResult | BaseException
#: Sets what a session adds to a result (judge, LLM counts) from the question's LLM counts.
Finisher = Callable[[LensCase, QuestionResult, LLMCounts], QuestionResult]


@dataclass(eq=False)
class _Stream:
    """The selected questions of one (adapter, scope) being answered."""

    label: str
    scope: LoadedScope
    checkpoints: list[int]
    batches: list[_Batch]
    instances: int
    thread_safe: bool
    tracks_stats: bool
    pending: set[CaseKey]
    #: Questions selected (answered or not).
    total: int = 0
    launched: int = 0
    #: Questions handed to the pool and not answered yet.
    answering: int = 0
    #: A :meth:`ConcurrentRunner._launch` waits for the owning thread to be idle.
    launch_queued: bool = False
    replicas: list[int] = field(default_factory=list)
    busy: set[int] = field(default_factory=set)
    #: Per replica: held by a worker thread while one adapter call of its question runs and is charged.
    locks: dict[int, threading.Lock] = field(default_factory=dict)


@dataclass(eq=False)
class _Batch:
    """The questions of one checkpoint of a stream, answered on one replica."""

    stream: _Stream
    checkpoint: int
    cases: list[LensCase]
    replica: int = -1
    answering: int = 0
    answered: bool = False
    #: LLM requests made while streaming the replica to this checkpoint (charged to the first question), and their keys.
    advance_llm: LLMCounts = field(default_factory=LLMCounts)
    advance_requests: list[str] = field(default_factory=list)
    stats: dict[CaseKey, dict[str, int]] = field(default_factory=dict)
    stats_faults: dict[CaseKey, AdapterFault] = field(default_factory=dict)
    #: Results that arrived before every question of the batch was answered (their counters may still grow).
    held: list[tuple[LensCase, Outcome, LLMCounts]] = field(default_factory=list)

    @property
    def first(self) -> CaseKey:
        return self.cases[0].item_key


class ConcurrentRunner:
    """Answers the questions of this process concurrently; :meth:`result` hands out one question's result.

    Drive it from the thread that owns the adapters (pytest's): work advances while that
    thread waits in :meth:`result` or :meth:`settle`; between pytest items, LLM requests keep
    going and adapter calls wait for the next item.
    """

    def __init__(
        self,
        runtime: LensRuntime,
        agent: Agent,
        *,
        scoring: Callable[[LensCase], Scoring],
        finish: Finisher,
        concurrency: int,
        max_instances: int = MAX_INSTANCES,
        progress: AnsweringProgress | None = None,
    ) -> None:
        if concurrency < 2:
            raise ValueError(f"a concurrent runner needs a concurrency of at least 2, got {concurrency}")
        self.runtime = runtime
        self.agent = agent
        self.scoring = scoring
        self.finish = finish
        self.concurrency = concurrency
        self.max_instances = max(1, max_instances)
        #: Lines while a stream's questions wait on the model (``None``: none, e.g. under ``-q``).
        self.progress = progress
        self._calls = OwnerThreadCalls()
        self._planned: dict[tuple[str, ...], list[LensCase]] = {}
        self._by_budget = False
        self._uses: Counter[CaseKey] = Counter()
        self._ready: dict[CaseKey, Outcome] = {}
        self._active: _Stream | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- what this process will run ------------------------------------------------------------
    def plan(self, cases: Iterable[LensCase], *, by_budget: bool = False) -> None:
        """The cases this process will run, in case order (a case named twice runs twice).

        A stream is an (adapter, scope): its budgets share each checkpoint's memory state. With
        ``by_budget`` it is an (adapter, scope, budget), for xdist workers, which receive whole
        (adapter, scope, budget) groups and may not receive a stream's other budgets.
        """
        self._by_budget = by_budget
        for case in cases:
            self._uses[case.item_key] += 1
            stream = self._planned.setdefault(self._stream_of(case), [])
            if self._uses[case.item_key] == 1:
                stream.append(case)

    def _stream_of(self, case: LensCase) -> tuple[str, ...]:
        key = (case.adapter, case.scope.scope_id)
        return (*key, case.budget.name) if self._by_budget else key

    # -- results -------------------------------------------------------------------------------
    def result(self, case: LensCase) -> QuestionResult:
        """The result of ``case``: answered now together with its stream's other planned questions, or earlier."""
        key = case.item_key
        if self._uses[key] > 0:
            self._uses[key] -= 1
        if key not in self._ready:
            if self._active is None or key not in self._active.pending:
                self.settle()
                self._start(case)
            self._calls.serve_until(lambda: key in self._ready, tick=self._tick if self.progress else None)
        outcome = self._ready.pop(key)
        if self._active is not None and not self._active.pending:
            self._active = None
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def settle(self) -> None:
        """Finish the stream being answered (its results are kept); afterwards no adapter is in use."""
        stream = self._active
        if stream is not None:
            self._calls.serve_until(lambda: not stream.pending, tick=self._tick if self.progress else None)
            self._active = None

    def close(self) -> None:
        """Stop: adapter calls still waiting are cancelled, worker threads finish what they are doing."""
        self._calls.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._active = None
        self._ready.clear()

    # -- streams -------------------------------------------------------------------------------
    def _start(self, case: LensCase) -> None:
        chosen: dict[CaseKey, LensCase] = {}
        for planned in self._planned.get(self._stream_of(case), []):
            if (planned.item_key == case.item_key or self._uses[planned.item_key] > 0) and planned.item_key not in self._ready:
                chosen.setdefault(planned.item_key, planned)
        chosen.setdefault(case.item_key, case)
        cases = sorted(chosen.values(), key=lambda c: c.checkpoint)  # stable: case order within a checkpoint
        slot = self.runtime.slot(case.adapter)
        if slot.unavailable is not None:
            for skipped in cases:
                self._ready[skipped.item_key] = self.finish(skipped, skipped_result(skipped, self.agent, slot.unavailable), LLMCounts())
            return
        adapter = slot.caller.adapter if slot.caller is not None else None
        checkpoints = sorted({c.checkpoint for c in cases})
        stream = _Stream(
            label=case.adapter,
            scope=case.scope,
            checkpoints=checkpoints,
            batches=[],
            instances=min(self.max_instances, len(checkpoints)) if declares_isolated_instances(adapter) else 1,
            thread_safe=declares_thread_safe(adapter),
            tracks_stats=slot.caller is not None and slot.caller.has_stats,
            pending={c.item_key for c in cases},
        )
        stream.batches = [_Batch(stream, cp, [c for c in cases if c.checkpoint == cp]) for cp in checkpoints]
        stream.total = len(cases)
        self._active = stream
        if self.progress is not None:
            self.progress.start(stream.label, stream.scope.scope_id, stream.total)
        self._launch(stream)

    def _tick(self) -> None:
        """A progress line, if one is due: the active stream's questions done, in flight (holding a thread) and queued."""
        stream = self._active
        if stream is not None and self.progress is not None:
            done = stream.total - len(stream.pending)
            launched = sum(len(batch.cases) for batch in stream.batches[: stream.launched])
            self.progress.tick(done, min(self.concurrency, max(0, launched - done)))

    def _launch(self, stream: _Stream) -> None:
        """Start the next checkpoints, a round ahead of the pool's threads, on idle replicas (created up to the stream's limit).

        Their questions queue for a thread; streaming them now, while the running questions wait for their model,
        saves streaming them later, while the threads that freed up wait. Further ahead than a round, a replica
        would be held from checkpoints needed sooner.
        """
        while stream.launched < len(stream.batches) and stream.answering < self.concurrency * (1 + LOOKAHEAD_ROUNDS):
            replica = self._idle_replica(stream)
            if replica is None:
                return
            batch = stream.batches[stream.launched]
            stream.launched += 1
            try:
                self._start_batch(batch, replica)
            except Exception as exc:  # a bug, not an adapter fault (those are recorded): each question reports it
                stream.busy.discard(replica)
                stream.answering -= batch.answering
                batch.answering = 0
                batch.answered = True
                for case in batch.cases:
                    self._finish(batch, case, exc, LLMCounts())

    def _idle_replica(self, stream: _Stream) -> int | None:
        for replica in stream.replicas:
            if replica not in stream.busy:
                return replica
        if len(stream.replicas) >= stream.instances:
            return None
        replica = len(stream.replicas)
        if replica and self.runtime.slot(stream.label, replica).caller is None:
            stream.instances = len(stream.replicas)  # another copy cannot be built here: carry on with fewer
            return None
        stream.replicas.append(replica)
        stream.locks[replica] = threading.Lock()
        return replica

    def _start_batch(self, batch: _Batch, replica: int) -> None:
        """Stream ``replica`` to the batch's checkpoint (on this thread), then hand its questions to the pool."""
        stream, runtime = batch.stream, self.runtime
        label, scope, target = stream.label, stream.scope, batch.checkpoint
        stream.busy.add(replica)
        batch.replica = replica
        slot = runtime.slot(label, replica)
        fresh = slot.scope_id != scope.scope_id or slot.ingested > target
        # Pass every earlier checkpoint a single instance would have prepared at, so the state is the same.
        passes = [cp for cp in stream.checkpoints if cp < target and (fresh or cp >= slot.ingested)]
        # Between episodes, the calls of questions running on other instances are served, not held up behind the streaming.
        between = self._calls.serve_waiting
        for checkpoint in passes:
            runtime.advance(label, scope, checkpoint, replica, between=between)
        if passes or replica:
            runtime.stats_delta(label, replica)  # replaying for a replica is charged to no question
        with counting() as streamed:
            faults = runtime.advance(label, scope, target, replica, between=between)
        batch.advance_llm, batch.advance_requests = streamed.snapshot(), streamed.requested()
        if not stream.thread_safe:
            self._charge_stats(batch, batch.first)
        aliases = runtime.aliases(scope)
        caller, context = slot.caller, slot.context  # the replica's block at this checkpoint, before it moves on
        batch.answering = len(batch.cases)
        stream.answering += len(batch.cases)
        pool = self._executor()
        for case in batch.cases:
            view: AdapterCaller | None = None
            if caller is not None and stream.thread_safe:
                view = caller.concurrent()
            elif caller is not None:
                # Called on its own thread (a call timeout is set): the worker hands it the call; else the owner runs it.
                dispatch = self._on_replica if caller.timeout_s is not None else self._on_owner
                view = caller.via(partial(dispatch, batch, case.item_key))
            # Scoring is looked up here: suites build theirs lazily, and this thread is the only one that may.
            pool.submit(self._question, batch, case, view, faults, aliases, self.scoring(case), context)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="lens-question")
        return self._pool

    # -- adapter calls and counters (owning thread) ----------------------------------------------
    def _on_replica(self, batch: _Batch, key: CaseKey, thunk: Callable[[], Any]) -> Any:
        """Make one adapter call of question ``key`` from its worker thread (the call runs on the instance's own thread).

        The replica's lock keeps the call and the charging of the counters it moved together, as on the owning thread.
        """
        with batch.stream.locks[batch.replica]:
            self._calls.check_open()
            return self._charged_call(batch, key, thunk)

    def _on_owner(self, batch: _Batch, key: CaseKey, thunk: Callable[[], Any]) -> Any:
        """Run one adapter call of question ``key`` on the owning thread and charge the counters it moved."""
        return self._calls.call(partial(self._charged_call, batch, key, thunk))

    def _charged_call(self, batch: _Batch, key: CaseKey, thunk: Callable[[], Any]) -> Any:
        try:
            return thunk()
        finally:
            if batch.stream.tracks_stats:
                self._charge_stats(batch, key)

    def _charge_stats(self, batch: _Batch, key: CaseKey) -> None:
        growth, fault = self.runtime.stats_delta(batch.stream.label, batch.replica)
        charged = batch.stats.setdefault(key, {})
        for name, value in growth.items():
            charged[name] = charged.get(name, 0) + value
        if fault is not None:
            batch.stats_faults.setdefault(key, fault)

    # -- one question (worker thread) ------------------------------------------------------------
    def _question(
        self,
        batch: _Batch,
        case: LensCase,
        caller: AdapterCaller | None,
        faults: list[AdapterFault],
        aliases: RefAliases,
        scoring: Scoring,
        context: MemoryContext | None,
    ) -> None:
        outcome: Outcome
        with in_order(), counting() as llm:  # its model requests go out before those of questions started later
            try:
                answered = answer_case(case, caller, faults, self.agent, aliases, started=time.perf_counter(), context=context)
            except BaseException as exc:  # Cancelled when the run ended, or a bug: the question's test reports it
                self._calls.post(partial(self._answered, batch))
                self._calls.post(partial(self._done, batch, case, exc, llm.snapshot()))
                return
            self._calls.post(partial(self._answered, batch))
            try:
                outcome = score_case(answered, scoring, {}).without_queueing(llm.load().wait_s).with_requests(llm.requested())
            except BaseException as exc:
                outcome = exc
        self._calls.post(partial(self._done, batch, case, outcome, llm.snapshot()))

    # -- bookkeeping (owning thread) -------------------------------------------------------------
    def _answered(self, batch: _Batch) -> None:
        """One more question of ``batch`` is answered (a thread is free); when all are, free its replica too."""
        batch.answering -= 1
        stream = batch.stream
        stream.answering -= 1
        if batch.answering:
            self._launch_when_idle(stream)
            return
        if stream.thread_safe and stream.tracks_stats:
            self._charge_stats(batch, batch.first)
            for case in batch.cases[1:]:
                batch.stats[case.item_key] = dict.fromkeys(batch.stats.get(batch.first, {}), 0)
        batch.answered = True
        stream.busy.discard(batch.replica)
        held, batch.held = batch.held, []
        for case, outcome, llm in held:
            self._finish(batch, case, outcome, llm)
        self._launch_when_idle(stream)

    def _launch_when_idle(self, stream: _Stream) -> None:
        """Launch the next checkpoints once no adapter call of a running question waits (streaming there is slow)."""
        if not stream.launch_queued:
            stream.launch_queued = True
            self._calls.when_idle(partial(self._queued_launch, stream))

    def _queued_launch(self, stream: _Stream) -> None:
        stream.launch_queued = False
        self._launch(stream)

    def _done(self, batch: _Batch, case: LensCase, outcome: Outcome, llm: LLMCounts) -> None:
        if not batch.answered:
            batch.held.append((case, outcome, llm))
            return
        self._finish(batch, case, outcome, llm)

    def _finish(self, batch: _Batch, case: LensCase, outcome: Outcome, llm: LLMCounts) -> None:
        key = case.item_key
        batch.stream.pending.discard(key)
        if not batch.stream.pending and self.progress is not None and batch.stream is self._active:
            self.progress.tick(batch.stream.total, 0, final=True)
        if isinstance(outcome, BaseException):
            self._ready[key] = outcome
            return
        update: dict[str, Any] = {"adapter_stats": batch.stats.pop(key, {})}
        fault = batch.stats_faults.pop(key, None)
        if fault is not None:
            update["faults"] = [*outcome.faults, fault]
        if key == batch.first:
            llm = llm + batch.advance_llm
            outcome = outcome.with_requests(batch.advance_requests)
        self._ready[key] = self.finish(case, outcome.model_copy(update=update), llm)
