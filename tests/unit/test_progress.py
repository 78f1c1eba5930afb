"""Progress lines: when they are due, what they say, and how the runner and the embedder feed them."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_lens.datasets import LoadedScope
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.progress import (
    AnsweringProgress,
    ClauseProgress,
    ModelLoad,
    Progress,
    StreamProgress,
    format_stream_line,
    report_activity,
    report_embeddings,
)
from pytest_lens.records.settings import AdapterSpec
from tests.support import RecordingMemory


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stream_line_gives_episodes_embeddings_time_and_an_estimate() -> None:
    stream = StreamProgress("sqlite-hybrid", "scope_01", 120, done=40, embedded=80, cached=12)
    assert format_stream_line(stream, 10.0) == (
        "lens: sqlite-hybrid | scope_01: ingesting 40/120 episodes, embeddings 80 new + 12 cached, 10.0 s, ~20 s to go"
    )
    fresh = StreamProgress("bm25", "s", 10)
    assert format_stream_line(fresh, 0.0) == "lens: bm25 | s: ingesting 0/10 episodes, 0.0 s, estimate after the first episodes"
    done = StreamProgress("bm25", "s", 10, replay=True, done=10)
    assert format_stream_line(done, 3.25) == "lens: bm25 | s: replaying 10/10 episodes, 3.2 s, done"


def test_the_first_line_comes_at_once_then_one_per_interval_and_a_last_one_for_slow_streams() -> None:
    lines: list[str] = []
    clock = Clock()
    progress = Progress(lines.append, interval_s=2.0, clock=clock)
    with progress.ingesting("mem", "s1", 4, restart=True) as stream:
        assert lines == ["lens: mem | s1: ingesting 0/4 episodes, 0.0 s, estimate after the first episodes"]
        clock.now += 1.0
        progress.episode_done(stream)  # 1 s after the last line: not due
        clock.now += 1.5
        progress.episode_done(stream)
        assert lines[-1] == "lens: mem | s1: ingesting 2/4 episodes, 2.5 s, ~2 s to go"
    clock.now += 60.0  # questions are answered: not ingestion time
    with progress.ingesting("mem", "s1", 4, restart=False) as stream:
        assert len(lines) == 2  # resuming the same stream prints nothing new
        clock.now += 0.5
        progress.episode_done(stream)
        progress.episode_done(stream)
    assert lines[-1] == "lens: mem | s1: ingesting 4/4 episodes, 3.0 s, done"
    assert len(lines) == 3


def test_the_done_line_is_printed_once_after_prepare_with_what_it_embedded() -> None:
    # The reference adapters embed what is still queued in prepare(), after the last episode: the "done" line says so,
    # once (printed at the last episode, it had left those out, and a second "done" line would repeat it).
    lines: list[str] = []
    clock = Clock()
    progress = Progress(lines.append, interval_s=2.0, clock=clock)
    with progress.ingesting("emb", "s1", 2, restart=True) as stream:
        clock.now += 3.0
        progress.episode_done(stream)
        clock.now += 3.0
        progress.episode_done(stream)
        clock.now += 3.0
        report_embeddings(new=5)  # prepare() embeds the queue
    assert lines == [
        "lens: emb | s1: ingesting 0/2 episodes, 0.0 s, estimate after the first episodes",
        "lens: emb | s1: ingesting 1/2 episodes, 3.0 s, ~3 s to go",
        "lens: emb | s1: ingesting 2/2 episodes, embeddings 5 new + 0 cached, 9.0 s, done",
    ]


def test_a_fast_stream_prints_one_line() -> None:
    lines: list[str] = []
    progress = Progress(lines.append, interval_s=2.0, clock=Clock())
    with progress.ingesting("bm25", "s1", 2, restart=True) as stream:
        progress.episode_done(stream)
        progress.episode_done(stream)
    assert lines == ["lens: bm25 | s1: ingesting 0/2 episodes, 0.0 s, estimate after the first episodes"]


def test_embedders_report_into_the_stream_being_ingested_and_nowhere_else() -> None:
    lines: list[str] = []
    clock = Clock()
    progress = Progress(lines.append, interval_s=2.0, clock=clock)
    report_embeddings(new=5)  # no stream: ignored
    with progress.ingesting("emb", "s1", 10, restart=True) as stream:
        report_embeddings(cached=3)
        clock.now += 2.0
        report_embeddings(new=4)
        report_activity("loading the embedding model x (once per process)")
    report_embeddings(new=100)
    assert (stream.embedded, stream.cached) == (4, 3)
    assert lines[1] == "lens: emb | s1: ingesting 0/10 episodes, embeddings 4 new + 3 cached, 2.0 s, estimate after the first episodes"
    assert lines[2] == "lens: emb | s1: loading the embedding model x (once per process) (2.0 s)"


def test_a_restarted_stream_is_a_replay(tmp_path: Path, small_scope: LoadedScope) -> None:
    lines: list[str] = []
    runtime = LensRuntime({"mem": AdapterSpec("mem", "tests.support:RecordingMemory")}, tmp_path)
    runtime.progress = Progress(lines.append, interval_s=1000.0)
    runtime.advance("mem", small_scope, 4)
    runtime.advance("mem", small_scope, 4)
    runtime.advance("mem", small_scope, 6)
    runtime.advance("mem", small_scope, 2)
    assert [line.split(",")[0] for line in lines] == ["lens: mem | s1: ingesting 0/6 episodes", "lens: mem | s1: replaying 0/6 episodes"]


class Embeds(RecordingMemory):
    """Embeds every episode through the bundled embedder's cache path (a real CachedEmbedder over a counting model)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from pytest_lens.embedding import CachedEmbedder

        self.embedder = CachedEmbedder(_Letters(), None)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        self.embedder.encode([text, text])


class _Letters:
    model_id = "letters"

    def encode(self, texts: Any) -> Any:
        import numpy as np

        return np.asarray([[text.count("a") + 1.0, len(text) + 1.0] for text in texts], dtype=np.float32)


@pytest.mark.parametrize("call_timeout", [None, 60.0], ids=["on-the-ingesting-thread", "on-the-adapter-thread"])
def test_the_cached_embedder_reports_what_it_embedded(tmp_path: Path, small_scope: LoadedScope, call_timeout: float | None) -> None:
    # With a call timeout (a run's default) every adapter call runs on the adapter's own thread: its reports count too.
    lines: list[str] = []
    clock = Clock()
    runtime = LensRuntime({"emb": AdapterSpec("emb", f"{__name__}:Embeds")}, tmp_path, call_timeout=call_timeout)
    runtime.progress = Progress(lines.append, interval_s=0.0, clock=clock)
    runtime.advance("emb", small_scope, 6)
    # each ingest embeds its text once (new) and finds the duplicate in the same call (cached)
    assert lines[-1] == "lens: emb | s1: ingesting 6/6 episodes, embeddings 6 new + 6 cached, 0.0 s, done"
    runtime.close()


class LoadsAModel(RecordingMemory):
    """Its first ``ingest`` loads a model and embeds, each time waiting until the line saying so is printed."""

    PRINTED: ClassVar[list[str]] = []
    NEW_LINE = threading.Condition()
    THREADS: ClassVar[list[str]] = []

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        if self.THREADS:
            return
        self.THREADS.append(threading.current_thread().name)
        report_activity("loading the embedding model x (once per process)")
        self._until_printed("loading the embedding model x")
        report_embeddings(new=3)
        self._until_printed("embeddings 3 new + 0 cached")

    def _until_printed(self, text: str) -> None:
        with self.NEW_LINE:
            assert self.NEW_LINE.wait_for(lambda: any(text in line for line in self.PRINTED), 30), f"no line said {text!r}"


def test_what_the_adapter_thread_reports_is_printed_by_the_ingesting_thread_while_it_waits(
    tmp_path: Path, small_scope: LoadedScope
) -> None:
    LoadsAModel.PRINTED.clear()
    LoadsAModel.THREADS.clear()
    printers: list[str] = []

    def sink(line: str) -> None:
        printers.append(threading.current_thread().name)
        with LoadsAModel.NEW_LINE:
            LoadsAModel.PRINTED.append(line)
            LoadsAModel.NEW_LINE.notify_all()

    runtime = LensRuntime({"m": AdapterSpec("m", f"{__name__}:LoadsAModel")}, tmp_path, call_timeout=60.0)
    runtime.progress = Progress(sink, interval_s=0.0)
    faults = runtime.advance("m", small_scope, 2)
    runtime.close()
    assert faults == []
    assert LoadsAModel.THREADS == ["lens-adapter-m"]  # reported on the adapter's thread, during the first ingest...
    assert set(printers) == {threading.current_thread().name}  # ...printed by the one that ingests
    # Every line says something new: the ingesting thread beats every second while it waits, and prints only news.
    assert [re.sub(r"\d+\.\d s", "T s", line) for line in LoadsAModel.PRINTED] == [
        "lens: m | s1: ingesting 0/6 episodes, T s, estimate after the first episodes",
        "lens: m | s1: loading the embedding model x (once per process) (T s)",
        "lens: m | s1: ingesting 0/6 episodes, embeddings 3 new + 0 cached, T s, estimate after the first episodes",
        "lens: m | s1: ingesting 1/6 episodes, embeddings 3 new + 0 cached, T s, " + LoadsAModel.PRINTED[3].rsplit(", ", 1)[1],
        "lens: m | s1: ingesting 2/6 episodes, embeddings 3 new + 0 cached, T s, " + LoadsAModel.PRINTED[4].rsplit(", ", 1)[1],
    ]


def test_a_clause_is_quiet_for_its_first_seconds_then_reports_its_examples() -> None:
    lines: list[str] = []
    clock = Clock()
    ticker = ClauseProgress(lines.append, "search.limit", "Memory", 25, after_s=2.0, interval_s=2.0, clock=clock)
    ticker.example(1)
    clock.now += 2.5
    ticker.example(7)
    clock.now += 1.0
    ticker.example(8)  # 1 s after the last line
    clock.now += 2.0
    ticker.example(31)
    assert lines == [
        "lens conformance: search.limit [Memory]: example 7 of 25, 2.5 s",
        "lens conformance: search.limit [Memory]: example 31 (shrinking or replaying), 5.5 s",
    ]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_answering_progress_is_quiet_at_first_then_says_questions_rates_and_what_is_left() -> None:
    lines: list[str] = []
    clock = _Clock()
    load = [ModelLoad(requests=10, completion_tokens=1000)]
    progress = AnsweringProgress(lines.append, interval_s=2.0, clock=clock, load=lambda: load[-1])
    progress.start("bm25", "cf01", 6)
    progress.tick(0, 4)
    assert lines == []  # a fast stream prints nothing
    clock.now = 10.0
    load.append(ModelLoad(requests=14, completion_tokens=1400, in_flight=4, waiting=2))
    progress.tick(2, 4)
    progress.tick(2, 4)  # not due yet
    clock.now = 20.0
    progress.tick(6, 0, final=True)
    assert lines == [
        "lens: bm25 | cf01: answering 2/6 questions done, 4 in flight, 0 queued, model: 4 requests being served, "
        "2 waiting for a free place, 4 answered (0.40/s), 400 tokens generated (40.0/s), 10 s, ~20 s to go",
        "lens: bm25 | cf01: answering 6/6 questions done, 0 in flight, 0 queued, model: 4 requests being served, "
        "2 waiting for a free place, 4 answered (0.20/s), 400 tokens generated (20.0/s), 20 s, done",
    ]


def test_answering_progress_without_a_model_says_nothing_about_one() -> None:
    # The offline agent's run uses no model: its lines had said "model: 0 requests being served, ..." throughout.
    lines: list[str] = []
    clock = _Clock()
    progress = AnsweringProgress(lines.append, interval_s=2.0, clock=clock)
    progress.start("bm25", "cf01", 6)
    clock.now = 10.0
    progress.tick(2, 1)
    assert lines == ["lens: bm25 | cf01: answering 2/6 questions done, 1 in flight, 3 queued, 10 s, ~20 s to go"]


def test_answering_progress_prints_no_last_line_for_a_stream_that_printed_none() -> None:
    lines: list[str] = []
    progress = AnsweringProgress(lines.append, interval_s=2.0, clock=_Clock())
    progress.start("bm25", "cf01", 1)
    progress.tick(1, 0, final=True)
    assert lines == []
