"""The LENS session: settings, datasets and cases in; results, summary, verdict and artifact out.

Plain Python: the pytest plugin translates hooks into calls on this object. It is a facade over one object per
concern: :mod:`~pytest_lens.runs.setup` (what the run is made of), :mod:`~pytest_lens.runs.ledger` (what it
produced), :mod:`~pytest_lens.runs.analysis` (what that adds up to), :mod:`~pytest_lens.runs.artifact` (the
document) and :mod:`~pytest_lens.runs.report` (what is shown, and the one outcome the plugin merges).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_lens.answering.engine import run_case
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.api_keys import mask_data
from pytest_lens.llm.stats import LLMCounts, counting
from pytest_lens.records.card import refusing
from pytest_lens.records.options import ACCEPT_UNLIKE, BASELINE
from pytest_lens.records.results import (
    AdapterFault,
    AdapterSummary,
    ListRows,
    QuestionResult,
    ResultRows,
    RowsFile,
    RunArtifact,
    ScoredResult,
)
from pytest_lens.records.rows import FileRows, RowSpan, RowWriter, rows_path, write_rows
from pytest_lens.reports.terminal import LensReport, Verdict
from pytest_lens.runs.analysis import RunAnalysis
from pytest_lens.runs.artifact import INTERRUPTED, build_artifact, save_run
from pytest_lens.runs.ledger import ResultLedger
from pytest_lens.runs.report import Line, RunOutcome, RunReport, write_html
from pytest_lens.runs.setup import LensConfigError, RunSetup, UnlikeBaselineError, open_run
from pytest_lens.runs.storage import OutputError, write_document

if TYPE_CHECKING:
    from pytest_lens.answering.concurrency import ConcurrentRunner
    from pytest_lens.progress import AnsweringProgress, Progress
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.settings import LensSettings
    from pytest_lens.reports.views.worst import WorstQuestions
    from pytest_lens.runs.slicing import RunSlice
    from pytest_lens.runs.watch import RunRescue

__all__ = ["LensConfigError", "LensSession", "SerialAnswering", "UnlikeBaselineError", "check_baseline"]


@dataclass(eq=False)
class SerialAnswering:
    """The (adapter, scope) whose questions a serial run answers now, one at a time: its progress lines."""

    key: tuple[str, str, str]
    progress: AnsweringProgress
    total: int
    done: int = 0

    def beat(self) -> None:
        """The question being answered still waits: a line if one is due."""
        self.progress.tick(min(self.done, self.total - 1), 1)

    def answered(self) -> None:
        """One more question answered; the last line once all are."""
        self.done += 1
        if self.done >= self.total:
            self.progress.tick(self.total, 0, final=True)


class LensSession:
    """One pytest session's LENS run (on the controller, or on one xdist worker)."""

    def __init__(self, setup: RunSetup) -> None:
        self.setup = setup
        self.ledger = ResultLedger(setup.cases)
        self._analysis: RunAnalysis | None = None
        self._artifact: RunArtifact | None = None
        #: Cases this process will run (:meth:`plan`), and the concurrent runner of each runtime.
        self._planned: list[LensCase] = []
        self._plan_by_budget = False
        self._runners: dict[int, ConcurrentRunner] = {}
        #: A serial run's stream being answered (its progress lines).
        self._serial: SerialAnswering | None = None
        #: The watchdog for calls that hold the GIL, and its journal (:meth:`watch_calls`).
        self._rescue: RunRescue | None = None
        #: ``--lens-shard`` / ``--lens-resume``: which cases this process runs and which kept results it reuses.
        self.slice: RunSlice | None = None
        #: ``lens merge``: the shards this run was joined from.
        self.merged_from: list[str] | None = None
        #: ``--lens-json``: the rows file, written as results are recorded (``None`` before the first, or once it failed).
        self._rows: RowWriter | None = None
        self._rows_failed = False
        #: Whether a result was recorded without its transcript (``lens merge``): then the rows are read back from the file.
        self._scored = False
        #: Rows files written whole, with the ledger version they hold (the document is written twice: once before
        #: the statistics, once whole).
        self._rows_written: dict[Path, tuple[int, RowsFile]] = {}

    @classmethod
    def open(cls, settings: LensSettings) -> LensSession:
        """Validate adapters, budgets and datasets; :class:`LensConfigError` on anything unusable."""
        session = cls(open_run(settings))
        check_baseline(session.setup)
        if settings.shard is not None or settings.resume_dir is not None:
            from pytest_lens.runs.slicing import plan_slice

            try:
                session.slice = plan_slice(session.setup)
            except ValueError as exc:  # an unreadable --lens-shard-durations artifact
                raise LensConfigError(f"--lens-shard-durations: {exc}") from None
        return session

    def keeps(self, case: LensCase) -> bool:
        """Whether this process runs ``case`` (its shard's, and no kept result of ``--lens-resume`` stands for it)."""
        return self.slice is None or self.slice.keeps(case)

    def reused_failures(self) -> bool:
        """Whether a kept result ``--lens-resume`` reused failed its test when it ran (the run fails, as it did then)."""
        kept = self.slice.reused.values() if self.slice is not None else ()
        return any(result.failed and result.skipped is None for results in kept for result in results)

    def reuse_kept(self) -> int:
        """Record the kept results ``--lens-resume`` reuses (on the process that reports); how many."""
        reused = [result for results in (self.slice.reused.values() if self.slice is not None else ()) for result in results]
        for result in reused:
            self.record(result)
        return len(reused)

    # -- what the plugin reads ---------------------------------------------------------------
    @property
    def settings(self) -> LensSettings:
        """The run's settings."""
        return self.setup.settings

    @property
    def cases(self) -> list[LensCase]:
        """Every case of the run, in order."""
        return self.setup.cases

    @property
    def results(self) -> dict[tuple[str, str, str, str, int], QuestionResult]:
        """Recorded results by (adapter, scope, budget, question, repetition)."""
        return self.ledger.results

    @property
    def expected(self) -> dict[tuple[str, str, str, str, int], LensCase]:
        """Selected cases by (adapter, scope, budget, question, repetition)."""
        return self.ledger.expected

    @property
    def analysis(self) -> RunAnalysis:
        """The figures over the results recorded so far (a new analysis once they change)."""
        if self._analysis is None or self._analysis.version != self.ledger.version:
            self._analysis = RunAnalysis(self.setup, self.ledger, self.slice, self.merged_from)
            self._artifact = None
        return self._analysis

    # -- answering ---------------------------------------------------------------------------
    def new_runtime(self, storage_root: Path) -> LensRuntime:
        """Adapter instances for this process, storing under ``storage_root``."""
        setup = self.setup
        return LensRuntime(
            {spec.label: spec for spec in setup.adapter_specs},
            storage_root,
            call_timeout=setup.settings.call_timeout,
            opaque_refs=setup.settings.opaque_refs,
            lens_llm=setup.llm.component_client(),
        )

    def run(self, case: LensCase, runtime: LensRuntime) -> QuestionResult:
        """Answer and score one case (a sibling suite's question with that suite's scoring).

        With a concurrency above 1 the case is answered together with the other planned
        cases of its (adapter, scope) stream (see :mod:`pytest_lens.answering.concurrency`); the result is the same.
        """
        if self.setup.concurrency > 1:
            return self._runner(runtime).result(case)
        stream = self._serial_stream(case, runtime)
        with counting() as used:
            result = run_case(case, runtime, self.setup.agent, self.setup.scoring_for(case), beat=stream.beat if stream else None)
        if stream is not None:
            stream.answered()
        result = result.without_queueing(used.load().wait_s).with_requests(used.requested())
        return self._finish(case, result, used.snapshot())

    def _serial_stream(self, case: LensCase, runtime: LensRuntime) -> SerialAnswering | None:
        """Progress lines of a serial run while its question waits (on the model above all); ``None`` under ``-q``."""
        if runtime.progress is None:
            return None
        key = (case.adapter, case.scope.scope_id, case.budget.name if self._plan_by_budget else "")
        stream = self._serial
        if stream is None or stream.key != key:
            total = sum(
                1
                for planned in self._planned
                if (planned.adapter, planned.scope.scope_id, planned.budget.name if self._plan_by_budget else "") == key
            )
            progress = self._answering_progress(runtime.progress)
            stream = self._serial = SerialAnswering(key, progress, max(total, 1))
            progress.start(case.adapter, case.scope.scope_id, stream.total)
        return stream

    def plan(self, cases: Iterable[LensCase], *, by_budget: bool = False) -> None:
        """The cases this process will run (pytest's selection): concurrent runs answer a stream's planned questions together.

        ``by_budget``: on an xdist worker, which receives whole (adapter, scope, budget) groups.
        """
        self._planned = self.ledger.in_case_order(cases)
        self._plan_by_budget = by_budget
        for runner in self._runners.values():
            runner.plan(self._planned, by_budget=by_budget)

    def watch_calls(self, *, rescue: bool) -> None:
        """With a call timeout, start the watchdog that ends the run should an adapter call hold the GIL past it.

        ``rescue``: it writes the run's outputs first (the process that reports the run; not an xdist worker,
        whose controller records the crash). See :mod:`pytest_lens.runs.rescue`.
        """
        if self._rescue is not None or not self.settings.call_timeout or self.settings.call_timeout <= 0:
            return
        from pytest_lens.runs.watch import RunRescue

        ledger = self.ledger
        try:
            self._rescue = RunRescue.start(self.settings, list(ledger.expected.values()), list(ledger.results.values()), rescue=rescue)
        except Exception as exc:  # no watcher (no temporary directory, no process to spare): the run goes on unwatched
            import warnings

            warnings.warn(f"pytest-lens: adapter calls that hold the GIL will not be watched: {type(exc).__name__}: {exc}", stacklevel=2)

    def settle(self, runtime: LensRuntime) -> None:
        """Let every question being answered on ``runtime`` finish, so its adapters can be used directly."""
        runner = self._runners.get(id(runtime))
        if runner is not None:
            runner.settle()

    def close_runtime(self, runtime: LensRuntime) -> list[AdapterFault]:
        """Stop answering on ``runtime``, then close its adapters (returns close faults)."""
        runner = self._runners.pop(id(runtime), None)
        if runner is not None:
            runner.close()
        return runtime.close()

    def close(self) -> None:
        """Release what the session holds open (the LLM request cache's connection, the watchdog, the rows file)."""
        if self._rows is not None:
            self._rows.close()
        if self._rescue is not None:
            self._rescue.close()
            self._rescue = None
        self.setup.llm.close()

    def _runner(self, runtime: LensRuntime) -> ConcurrentRunner:
        runner = self._runners.get(id(runtime))
        if runner is None:
            from pytest_lens.answering.concurrency import ConcurrentRunner  # only for --lens-concurrency above 1

            setup = self.setup
            # The pytest layer's sink and interval (none under -q).
            progress = self._answering_progress(runtime.progress) if runtime.progress is not None else None
            runner = ConcurrentRunner(
                runtime, setup.agent, scoring=setup.scoring_for, finish=self._finish, concurrency=setup.concurrency, progress=progress
            )
            runner.plan(self._planned, by_budget=self._plan_by_budget)
            self._runners[id(runtime)] = runner
        return runner

    def _answering_progress(self, ingesting: Progress) -> AnsweringProgress:
        """Answering lines where the ingestion lines go; the model's counters only in a run that uses a model."""
        from pytest_lens.progress import AnsweringProgress

        load = self.setup.llm.load if self.settings.llm.configured else None  # the offline agent's run: no model to report on
        return AnsweringProgress(ingesting.sink, interval_s=ingesting.interval_s, load=load)

    def _finish(self, case: LensCase, result: QuestionResult, used: LLMCounts) -> QuestionResult:
        """``result`` with the judge that scored it and the LLM requests it made."""
        judge = self.setup.judge_name(case) if result.skipped is None else None
        result = result.model_copy(update={"judge": judge, "llm": used or None, "control": self.setup.controls.get(case.adapter)})
        return masked_result(result)

    # -- collecting --------------------------------------------------------------------------
    def expect(self, cases: Iterable[LensCase]) -> None:
        """The cases selected to run; results missing at the end make the run incomplete."""
        cases = list(cases)
        self.ledger.expect(cases)
        if self._rescue is not None:
            self._rescue.expect(cases)

    def record(self, result: QuestionResult, source: RowSpan | None = None) -> None:
        """Keep one question's result (one answer of it, with ``--lens-repeat``); ``--lens-resume`` keeps each finished unit.

        With ``--lens-json`` its row is written to the rows file at once: a run that is killed keeps every row recorded.
        ``source``: where the row's bytes already are (``lens merge``: a shard's rows file); they are copied as they are
        when the rows are put in order, and ``result`` may be the row read without its transcript.
        """
        self.ledger.record(result)
        self._scored = self._scored or isinstance(result, ScoredResult)
        self._write_row(result, source)
        if self._rescue is not None:
            self._rescue.record(result)
        if self.slice is not None:
            self.slice.note(result, self.ledger)

    def open_rows(self) -> None:
        """``--lens-json``: create the rows file, and write a run document saying the run has not finished.

        Called when the run starts (or at its first result): from then on a run that is killed leaves a document and
        every row it recorded, and recording a result only appends a line. A file that cannot be written is given
        up, never the run: the rows are written from the results at the end, and :meth:`finish` says if that fails too.
        """
        path = _under(self.settings.rootdir, self.settings.json_path)
        if path is None or self._rows is not None or self._rows_failed:
            return
        try:
            self._rows = RowWriter(rows_path(path))
            self._rows.open()
            first = build_artifact(self.analysis, ListRows(()), statistics=False).model_copy(update={"pending": INTERRUPTED})
            write_document(path, first, RowsFile(file=self._rows.path.name))
        except OSError:
            self._give_up_rows()

    def _write_row(self, result: QuestionResult, source: RowSpan | None) -> None:
        """Append ``result`` to the ``--lens-json`` rows file (:meth:`open_rows` first), or, with ``source``, refer to it."""
        path = _under(self.settings.rootdir, self.settings.json_path)
        if path is None or self._rows_failed:
            return
        if self._rows is None and source is not None:  # lens merge: rows copied from where they are, at the end
            self._rows = RowWriter(rows_path(path))
        self.open_rows()
        if self._rows is None:
            return
        try:
            if source is None:
                self._rows.write(result)
            else:
                self._rows.refer(result.item_key, source)
        except OSError:
            self._give_up_rows()

    def _give_up_rows(self) -> None:
        self._rows_failed = True
        if self._rows is not None:
            self._rows.discard()
            self._rows = None

    def add_problems(self, problems: Iterable[str]) -> None:
        """Run-level problems found outside the results; each fails the verdict."""
        self.ledger.add_problems(problems)

    def record_crash(self, case: LensCase, worker: str) -> None:
        """A case's test crashed the worker running it: it has no result, and the incomplete line says why."""
        self.ledger.record_crash(case, worker)

    # -- what the run adds up to -------------------------------------------------------------
    def ordered_results(self) -> list[QuestionResult]:
        """Results in case order (stable, whatever order the tests ran in); every repetition of a question."""
        return self.analysis.ordered_results

    def summaries(self) -> dict[str, AdapterSummary]:
        """Per (adapter, budget) summaries of the LENS questions."""
        return self.analysis.summaries

    def incomplete(self) -> list[str]:
        """One line per (adapter, scope, budget) group with selected questions that produced no result."""
        return self.analysis.incomplete

    def verdict(self) -> Verdict:
        """Exit status and reasons."""
        return self.analysis.verdict

    def report(self, encoding: str | None = "utf-8") -> LensReport:
        """The terminal summary (``encoding``: of the output, to choose arrows it can show)."""
        return RunReport(self.analysis).summary(encoding)

    def worst_questions(self) -> WorstQuestions:
        """The summary block naming each adapter's worst questions and where their transcripts are."""
        return RunReport(self.analysis).worst_questions()

    # -- the artifact ------------------------------------------------------------------------
    def artifact(self, *, statistics: bool = True) -> RunArtifact:
        """The ``--lens-json`` document, built once per set of results.

        The JSON file, the HTML report and the saved run are one document (one ``created`` time), and
        building it twice (every result validated, every cited episode collected, ``git`` asked for
        the commit) was most of what writing a second one cost. Without ``statistics``: no statistics,
        comparison or verdict (nothing imports numpy; see :data:`~pytest_lens.runs.artifact.PENDING`), built afresh.
        """
        analysis = self.analysis
        if not statistics:
            return build_artifact(analysis, self.whole_rows(), statistics=False)
        if self._artifact is None:
            self._artifact = build_artifact(analysis, self.whole_rows())
        return self._artifact

    def whole_rows(self) -> ResultRows:
        """The run's rows, whole, in case order.

        The results recorded; or, when they were recorded without their transcripts (``lens merge``), the rows file
        written from where they were (:meth:`rows_file` comes first).
        """
        if not self._scored:
            return ListRows(self.analysis.ordered_results)
        written = [(target, rows) for target, (version, rows) in self._rows_written.items() if version == self.ledger.version]
        if not written:
            raise ValueError("the rows of a run recorded without transcripts are read from its rows file: write it first")
        target, rows = written[0]
        return FileRows(target, rows.count)

    def write_artifact(self, path: Path, *, statistics: bool = True) -> None:
        """Write the rows and the run document (``statistics=False``: the copy written before them, see :meth:`artifact`)."""
        rows = self.rows_file(path)
        write_document(path, self.artifact(statistics=statistics), rows)

    def rows_file(self, path: Path) -> RowsFile:
        """The rows of the run document at ``path``, written; :class:`OutputError` when they cannot be.

        The file filled as results were recorded, put in case order; or, when there is none for ``path``, every result
        written now.
        """
        target = rows_path(path)
        written = self._rows_written.get(target)
        if written is not None and written[0] == self.ledger.version:
            return written[1]
        writer = self._rows
        try:
            # A signal can land between recording a result and writing its row: then the results are written again.
            if writer is not None and writer.path == target and writer.keys == self.ledger.results.keys():
                rows = writer.finish(self.ledger.position)
            elif self._scored:  # results read without their transcripts cannot be written again
                raise OSError(errno.EIO, "rows recorded without their transcripts were not all given where to copy them from")
            else:
                if writer is not None and writer.path == target:
                    writer.close()
                    self._rows = None
                rows = write_rows(target, (result.model_dump_json().encode("utf-8") for result in self.ledger.ordered_results()))
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror or str(exc), str(target)) from None
        self._rows_written[target] = (self.ledger.version, rows)
        return rows

    def write_artifact_first(self, path: Path) -> None:
        """Write the artifact without statistics, before they are computed; nothing when nothing ran."""
        if self.ledger.results:
            self.write_artifact(path, statistics=False)

    def write_html(self, path: Path) -> int:
        """Write the HTML report of this run (with per-question deltas against ``--lens-baseline``); its size in bytes."""
        return write_html(path, self.artifact(), self.analysis)

    def save_run(self) -> Path | None:
        """Save the artifact under ``--lens-save``'s name; the path, or ``None`` when not asked to or nothing ran."""
        return save_run(self.analysis, self.artifact)

    # -- the end -----------------------------------------------------------------------------
    def finish(self, problems: Iterable[str] = (), *, encoding: str | None = "utf-8") -> RunOutcome:
        """Write what was asked for (artifact, HTML report, saved run) and say how the run went: lines and one exit code.

        The artifact is written once without statistics before the verdict (whose baseline comparison imports
        numpy), then whole; an output that cannot be written fails the run without costing it its summary.
        """
        if found := list(problems):
            self.add_problems(found)
        settings = self.settings
        json_path = _under(settings.rootdir, settings.json_path)
        notes: list[Line] = []
        if json_path is not None:
            try:
                self.write_artifact_first(json_path)
            except OSError as exc:  # a full disk, say: no artifact, said so, and the rest of the run's output survives
                notes.append(Line(f"could not write the run artifact {settings.json_path}: {exc.strerror or exc}", {"red": True}))
                json_path = None
        verdict = self.verdict()
        failed = bool(verdict.exit_code) or bool(notes)
        if json_path is not None:
            try:
                self.write_artifact(json_path)
            except Exception as exc:  # the statistics failed (e.g. no memory left to import numpy): the first copy stays
                failed = True
                notes.append(
                    Line(
                        f"could not complete the run artifact {settings.json_path}: {type(exc).__name__}: {exc} "
                        "(it holds every result and summary, without statistics, comparison and verdict: see its 'pending')",
                        {"red": True},
                    )
                )
        html_note, html_written = self._write_html_report()
        failed = failed or not html_written
        saved_note: Line | None = None
        try:
            saved = self.save_run()
        except (OSError, ValueError) as exc:
            failed = True
            saved_note = Line(f"could not save the run ({settings.save_name}): {exc}", {"red": True})
        else:
            if saved is not None:
                saved_note = Line(f"saved run: {saved}")
        if not (self.ledger.expected or self.ledger.results):
            return RunOutcome([], int(failed))  # no LENS question was selected (e.g. --lens-conformance): nothing to summarise
        try:
            from pytest_lens.reports.render import line_markup  # warmed up with the summary's imports

            lines = [Line(line, line_markup(line)) for line in self.report(encoding).lines]
        except (ImportError, MemoryError) as exc:  # e.g. numpy under an address-space limit: say so, keep the outputs
            failed = True
            kept = f"the run artifact {settings.json_path} holds every result" if json_path is not None else "no artifact was asked for"
            lines = [Line(f"could not compute the LENS summary: {type(exc).__name__}: {exc} ({kept})", {"red": True})]
        if json_path is not None:
            lines.append(Line(f"run artifact: {settings.json_path}"))
        lines.extend(notes)
        lines.extend(note for note in (saved_note, html_note) if note is not None)
        if worst := RunReport(self.analysis).worst_questions(html=html_written, json=json_path is not None).lines:
            lines.extend(Line(line) for line in ["", *worst])
        return RunOutcome(lines, int(failed), verdict.reasons)

    def _write_html_report(self) -> tuple[Line | None, bool]:
        """``--lens-html``: written after the artifact, so a report that cannot be made loses no result.

        The line to show (``None`` when none was asked for) and whether the report was written (or needed none).
        """
        path = self.settings.html_path
        if path is None or not (self.ledger.results or self.ledger.expected):
            return None, True
        started = time.perf_counter()
        try:
            size = self.write_html(_under(self.settings.rootdir, path) or path)
        except OSError as exc:  # an unwritable path, a full disk: nothing of the report is left behind
            return Line(f"could not write the HTML report {path}: {exc.strerror or exc}", {"red": True}), False
        except Exception as exc:  # a report bug must not cost the run its summary
            return Line(f"could not write the HTML report {path}: {type(exc).__name__}: {exc}", {"red": True}), False
        return Line(f"html report: {path} ({size / 1e6:.1f} MB, {time.perf_counter() - started:.1f} s)"), True


def check_baseline(setup: RunSetup) -> None:
    """:class:`UnlikeBaselineError` when ``--lens-baseline`` was measured differently, in a field not accepted by name."""
    baseline = setup.baseline
    if baseline is None:
        return
    ours = RunAnalysis(setup, ResultLedger(setup.cases)).identity.card
    if ours is None:
        return
    refused = refusing(ours, baseline.artifact.card, setup.settings.accept_unlike)
    if refused:
        fields = ",".join(d.field for d in refused)
        raise UnlikeBaselineError(
            f"{BASELINE}={setup.settings.baseline}: refused, the runs are unlike: "
            + "; ".join(d.line() for d in refused)
            + f". Their scores measure different things; compare runs measured alike, or pass {ACCEPT_UNLIKE}={fields} "
            "to compare anyway (the verdict line will say so)"
        )


def _under(rootdir: Path, path: Path | None) -> Path | None:
    """``path`` as given, relative to the rootdir."""
    if path is None:
        return None
    return path if path.is_absolute() else rootdir / path


def masked_result(result: QuestionResult) -> QuestionResult:
    """``result`` with every secret in it masked (an answer quoting a key, an error echoing one, an option's value).

    Every output of a question (the pytest report and its sections, JUnit, the artifact, the HTML report, saved runs)
    is made from this record, so this is where a question's secrets are masked once for all of them.
    """
    data = result.model_dump(mode="json")
    masked = mask_data(data)
    return result if masked == data else QuestionResult.model_validate(masked)
