"""The pytest plugin: routes pytest events to :class:`~pytest_lens.runs.session.LensSession`.

Installed but not asked for (no ``--lens-adapter`` / ``lens_adapters``), it adds
nothing to a run and imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_lens.plugin import options

if TYPE_CHECKING:
    from pytest_lens.execution.runner import LensRuntime
    from pytest_lens.plugin.lens_only import LensFileFilter
    from pytest_lens.plugin.xdist import LensXdist
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.results import QuestionResult
    from pytest_lens.runs.report import RunOutcome
    from pytest_lens.runs.session import LensSession

#: The conformance suite's options, marker, fixtures and hooks (light until a conformance test runs).
pytest_plugins = ["pytest_lens.plugin.conformance.hooks"]

SESSION_KEY = pytest.StashKey["LensSession"]()
#: ``user_properties`` name under which a question's result travels on its test report.
RESULT_PROPERTY = "lens_result"
#: Node id of the built-in LENS test module.
BUILTIN_NODEID = "lens"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--lens-*`` options and ``lens_*`` ini keys."""
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the ``pytest_lens_*`` hookspecs; keep pytest's assertion rewriting off our packages."""
    from pytest_lens.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    skip_assertion_rewriting(pluginmanager)


#: Our distribution's top-level packages, which pytest marks for assertion rewriting as a ``pytest11`` plugin's.
OWN_PACKAGES = ("pytest_lens", "lens_fixtures")


def skip_assertion_rewriting(pluginmanager: pytest.PytestPluginManager) -> None:
    """Unmark :data:`OWN_PACKAGES` for assertion rewriting: they hold no test assertion.

    pytest rewrites every module of a plugin's distribution so that a plugin's helper asserts
    explain themselves; ours have none (a user's ``assert`` on a result is in the user's test
    module, which pytest rewrites anyway). Rewriting them only makes pytest compile each module
    itself instead of loading the bytecode pip compiled at install time, and under
    ``PYTHONDONTWRITEBYTECODE=1`` (common in CI images) or a read-only install, again in every
    run. pytest has no public way to unmark a distribution: this edits its rewrite hook's marks
    when they look as expected and leaves the hook alone otherwise (rewriting then costs what it
    did). The few modules imported before this hook runs (this one, its settings) stay rewritten.
    """
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(marked, set) and isinstance(cache, dict):
        marked.difference_update(OWN_PACKAGES)
        cache.clear()


def pytest_configure(config: pytest.Config) -> None:
    """Read settings once and load datasets; activate only when an adapter is configured."""
    config.addinivalue_line("markers", "lens: a LENS question test, added or parametrized by pytest-lens")
    if hasattr(config.hook, "pytest_configure_node") and not _is_worker(config):  # an xdist controller (or may become one)
        from pytest_lens.plugin.terminal_progress import WorkerProgressLines

        config.pluginmanager.register(WorkerProgressLines(config), "lens-worker-progress")
    if not options.lens_requested(config):
        return
    from pytest_lens.runs.session import LensConfigError, LensSession, UnlikeBaselineError

    try:
        session = LensSession.open(options.read_settings(config))
    except UnlikeBaselineError as exc:  # refused like `lens compare` refuses it: exit 2, before any question runs
        pytest.exit(str(exc), returncode=2)
    except LensConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION_KEY] = session
    if session.slice is not None and _is_worker(config):
        from pytest_lens.plugin.xdist import SLICE_KEY

        session.slice.follow(config.workerinput.get(SLICE_KEY, {}))  # type: ignore[attr-defined]  # set by xdist on workers
    xdist = None
    # xdist's hooks exist whichever way it was loaded (entry point "xdist", or "-p xdist.plugin").
    if hasattr(config.hook, "pytest_xdist_make_scheduler"):
        from pytest_lens.plugin.xdist import LensXdist, configure_worker

        configure_worker(config, session)
        xdist = LensXdist(session, config)
        config.pluginmanager.register(xdist, "lens-xdist")
    config.pluginmanager.register(LensPlugin(session, config, xdist), "lens-session")
    from pytest_lens.plugin.signals import RunSignals

    signals = RunSignals()
    signals.install()  # SIGTERM ends the run as Ctrl-C does: the artifact keeps what ran
    config.add_cleanup(signals.restore)
    from pytest_lens.execution.calls import guard_process_exit

    config.add_cleanup(guard_process_exit())  # os._exit inside an adapter call is its fault, not the end of the run
    from pytest_lens.plugin import gc_tuning

    # Registered before the other plugins' cleanups (pytest's unraisable-exception check collects garbage in its
    # own), it runs after them: until then, the collections skip what the run froze (see gc_tuning).
    config.add_cleanup(gc_tuning.thaw)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class _BuiltinModule(pytest.Module):
    """The built-in test module; collects ``test_lens`` whatever ``python_functions`` says."""

    def funcnamefilter(self, name: str) -> bool:
        return name == "test_lens"

    def classnamefilter(self, name: str) -> bool:
        return False


class LensPlugin:
    """Hooks active only when pytest-lens is asked for."""

    def __init__(self, session: LensSession, config: pytest.Config, xdist: LensXdist | None = None) -> None:
        self.session = session
        self.config = config
        self.xdist = xdist
        from pytest_lens.plugin.lens_only import selects_only_lens
        from pytest_lens.plugin.warm_up import RunWarmUp

        #: ``-m lens``: test files without LENS tests are not even imported (see :mod:`pytest_lens.plugin.lens_only`).
        self.lens_only = selects_only_lens(config.option.markexpr)
        self.named_paths = {Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args}
        self._lens_files: LensFileFilter | None = None
        #: Imports the run will need, started in the background (the LLM client, the summary's statistics).
        self.warm_up = RunWarmUp(session)
        #: How the run went (its summary lines and exit code), once :meth:`pytest_sessionfinish` finished it.
        self.outcome: RunOutcome | None = None
        #: Threads alive before the run: one started since that outlives it is an adapter's (or a test's) leftover.
        self._threads_before = set(threading.enumerate())

    @property
    def _reporting(self) -> bool:
        """Verdicts, summaries and artifacts come from the controller, and only when tests ran."""
        return not _is_worker(self.config) and not self.config.option.collectonly

    def pytest_report_header(self) -> list[str]:
        """One line naming what is being measured."""
        s = self.session.setup
        adapters = ", ".join(spec.label for spec in s.adapter_specs)
        budgets = ", ".join(budget.name for budget in s.budgets)
        repeat = s.settings.repeat
        if self.config.getoption("--lens-conformance", False):
            return [f"lens: adapters {adapters}"]  # no LENS question is added: the conformance header says what runs
        asked = f"{len(s.cases) // repeat} questions x {repeat} answers" if repeat > 1 else f"{len(s.cases)} questions"
        lines = [f"lens: adapters {adapters}; agent {s.settings.agent}; budget {budgets}; {asked} in {len(s.scopes)} scope(s)"]
        return lines + (self.session.slice.header() if self.session.slice is not None else [])

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """Under ``-m lens``, skip test files that hold no LENS test (never one named on the command line)."""
        if not self.lens_only or collection_path.suffix != ".py" or collection_path.name in ("conftest.py", "__init__.py"):
            return None
        if collection_path.resolve() in self.named_paths:
            return None
        if self._lens_files is None:  # built at the first file: by then the plugins of -p and entry points are loaded
            from pytest_lens.plugin.lens_only import lens_file_filter

            self._lens_files = lens_file_filter(self.config)
        return True if self._lens_files.may_skip(collection_path) else None

    def pytest_sessionstart(self) -> None:
        """In a process that will send LLM requests, start importing the LLM client while pytest collects."""
        xdist_controller = self.xdist is not None and not _is_worker(self.config) and self.config.getvalue("dist") != "no"
        if not self.config.option.collectonly and not xdist_controller:
            self.warm_up.start(llm=True, summary=False)
        if self._reporting:
            self.session.open_rows()  # --lens-json: from now on a run that is killed keeps a document and every row
            self.session.reuse_kept()  # --lens-resume: the kept results stand for their questions, which are deselected

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize every test that asks for ``lens_case`` over all cases."""
        if "lens_case" in metafunc.fixturenames:
            cases = self.session.cases
            metafunc.parametrize("lens_case", cases, ids=[case.id for case in cases])

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        """Add the built-in LENS tests (unless the user's own tests use ``lens_case``) and mark LENS items.

        Runs first so that ``-k``, ``-m``, ``--deselect`` and ``--lf`` filter our items like any others.
        """
        if self.session.settings.builtin_tests and not any(_case_of(item) for item in items):
            from pytest_lens.plugin import _builtin_tests

            module = _BuiltinModule.from_parent(session, path=Path(_builtin_tests.__file__), nodeid=BUILTIN_NODEID)
            collected = [item for item in module.collect() if isinstance(item, pytest.Item)]
            # Report them like any collected module, so counts ("collected N items") and plugins see them.
            session.ihook.pytest_collectreport(report=pytest.CollectReport(BUILTIN_NODEID, "passed", None, list(collected)))
            items.extend(collected)
        if self.session.slice is not None:
            self._keep_slice(items)
        for item in items:
            case = _case_of(item)
            if case is not None:
                item.add_marker(pytest.mark.lens)
                if self.xdist is not None:  # used by an explicit --dist loadgroup; our own scheduler needs no marks
                    item.add_marker(pytest.mark.xdist_group(case.group))

    def _keep_slice(self, items: list[pytest.Item]) -> None:
        """``--lens-shard``/``--lens-resume``: deselect other shards' questions and those a kept result stands for.

        Tests that are not LENS questions run in shard 1 only, so that N shards run the suite once.
        """
        part = self.session.slice
        assert part is not None
        first = part.shard is None or part.shard[0] == 1
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            case = _case_of(item)
            (kept if (first if case is None else self.session.keeps(case)) else dropped).append(item)
        if dropped:
            self.config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember which questions were selected, to detect missing results, and plan concurrent answering."""
        selected = [case for item in session.items if (case := _case_of(item)) is not None]
        self.session.expect(selected)
        if not _is_worker(self.config):
            self.session.plan(selected)
        elif self.xdist is not None and self.xdist.streams_stay_together():
            # This worker runs whole (adapter, scope, budget) groups, but not necessarily a stream's other budgets.
            self.session.plan(selected, by_budget=True)
        if selected and self._reporting:
            self.warm_up.start(llm=False, summary=True)
        if self.session.settings.html_path is not None and self._reporting and selected:
            from pytest_lens.plugin.warm_up import warm_up
            from pytest_lens.reports.html import REPORT_MODULES

            warm_up(REPORT_MODULES, name="lens-html-warm-up")
        if selected:
            from pytest_lens.plugin import gc_tuning

            gc_tuning.freeze()  # imports, datasets and items stay to the end: collections need not walk them

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each question's result from its call report (on the controller under xdist)."""
        if report.when != "call" or _is_worker(self.config):
            return
        from pytest_lens.records.cases import stream_group
        from pytest_lens.records.results import QuestionResult

        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                result = QuestionResult.model_validate(value)
                self.session.record(result)
                if self.xdist is not None:
                    self.xdist.observe(stream_group(result.adapter, result.scope_id, result.budget), report)
                self.config.hook.pytest_lens_result(result=result, config=self.config)

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """A passed question shows its scores under ``-v``; one a hard gate zeroed is ``gated`` (``G``), not a plain pass."""
        if report.when != "call" or not report.passed:
            return None
        from pytest_lens.reports.legend import question_status

        return question_status(report.user_properties, verbose=self.config.get_verbosity() > 0)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Keep the full result off the teardown report.

        JUnit XML writes that report's ``user_properties``, which should be the per-question
        scores, not the whole result (it rode on the call report already).
        """
        report = yield
        if report.when == "teardown":
            report.user_properties = [(name, value) for name, value in report.user_properties if name != RESULT_PROPERTY]
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Finish the run (artifact, HTML report, saved run, verdict) and merge its exit code into pytest's, once."""
        from pytest_lens.plugin.leftovers import release_leftover_threads

        leftovers = release_leftover_threads(self._threads_before)
        if not self._reporting:
            return
        problems = self.xdist.grouping_problems() if self.xdist is not None else []
        problems.extend(leftovers)
        self.outcome = self.session.finish(problems, encoding=getattr(sys.stdout, "encoding", None))
        # --lens-resume: a reused result whose test failed when it ran fails this run too, and a run whose every
        # question was reused ran no test but has a verdict (not pytest's "no tests ran"); a shard given no stream group
        # (more shards than groups) owns nothing and did all it owed: exit 0, not 5 (which CI scripts read as "could not run").
        failed = bool(self.outcome.exit_code) or self.session.reused_failures()
        found = self.session.slice
        has_verdict = found is not None and (bool(self.session.ledger.results) or found.owns_nothing)
        if failed and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and has_verdict:
            session.exitstatus = pytest.ExitCode.OK

    def pytest_unconfigure(self) -> None:
        """Release session resources (the LLM cache connection)."""
        self.session.close()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the LENS summary."""
        outcome = self.outcome
        if outcome is None or not outcome.lines:
            return
        from pytest_lens.text import terminal_safe  # lines quote datasets, adapters and models: no escape acts

        terminalreporter.write_sep("=", "LENS summary")
        for line in outcome.lines:
            terminalreporter.write_line(terminal_safe(line.text), **line.markup)
        if outcome.reasons:
            # pytest's closing line would otherwise say only "N passed" above an exit status of 1.
            noun = "LENS gate failed" if len(outcome.reasons) == 1 else "LENS gates failed"
            terminalreporter.stats.setdefault(noun, []).extend(_VerdictReason(reason) for reason in outcome.reasons)


@dataclass(frozen=True)
class _VerdictReason:
    """A failed LENS gate, counted in pytest's closing line (``144 passed, 1 LENS gate failed``)."""

    reason: str


def _case_of(item: pytest.Item) -> LensCase | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    case: LensCase | None = callspec.params.get("lens_case")
    return case


def _session(config: pytest.Config) -> LensSession:
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        pytest.fail(
            f"pytest-lens is not active: pass {options.ADAPTER}=module:Class (or set lens_adapters in the ini file)",
            pytrace=False,
        )
    return session


@pytest.fixture(scope="session")
def lens_session(pytestconfig: pytest.Config) -> LensSession:
    """The LENS session of this pytest run."""
    return _session(pytestconfig)


@pytest.fixture(scope="session")
def lens_runtime(
    lens_session: LensSession, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Generator[LensRuntime, None, None]:
    """Adapter instances of this process; their storage is a private temporary directory, deleted at the end.

    While a scope is ingested it prints progress lines (not under ``-q``).
    """
    runtime = lens_session.new_runtime(tmp_path_factory.mktemp("lens-storage"))
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    # Started outside pytest's output capture: what the watchdog says when it ends a stuck run reaches the terminal.
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        lens_session.watch_calls(rescue=not _is_worker(pytestconfig))
    from pytest_lens.plugin.terminal_progress import progress_interval, progress_sink

    sink = progress_sink(pytestconfig)
    if sink is not None:
        from pytest_lens.progress import Progress

        runtime.progress = Progress(sink, interval_s=progress_interval(pytestconfig))
    yield runtime
    lens_session.close_runtime(runtime)


@pytest.fixture
def lens_case(pytestconfig: pytest.Config) -> LensCase:
    """One LENS question for one adapter (pytest-lens parametrizes this fixture)."""
    _session(pytestconfig)
    pytest.fail("lens_case was not parametrized; is this test collected by a pytest-lens run?", pytrace=False)


@pytest.fixture
def lens_run(request: pytest.FixtureRequest, lens_session: LensSession, lens_runtime: LensRuntime) -> Callable[[LensCase], QuestionResult]:
    """Answer and score a case, record its result on this test's report, and fail if the adapter misbehaved."""

    def run(case: LensCase) -> QuestionResult:
        from pytest_lens.plugin.junit import junit_properties
        from pytest_lens.text import terminal_safe  # pytest prints sections and failures as they are

        result = lens_session.run(case, lens_runtime)
        request.node.user_properties.append((RESULT_PROPERTY, result.model_dump(mode="json")))
        request.node.user_properties.extend(junit_properties(result))
        if result.skipped is not None:
            pytest.skip(result.skipped)
        request.node.add_report_section("call", "lens", terminal_safe(_trace(result)))
        if result.failed:
            pytest.fail(terminal_safe(result.failure_message()), pytrace=False)
        return result

    return run


@pytest.fixture
def lens_adapter(lens_case: LensCase, lens_session: LensSession, lens_runtime: LensRuntime) -> Any:
    """The adapter instance of ``lens_case``, fed exactly the episodes before its checkpoint."""
    lens_session.settle(lens_runtime)  # no question may still be using the adapter
    unavailable = lens_runtime.slot(lens_case.adapter).unavailable
    if unavailable is not None:
        pytest.skip(unavailable)
    faults = lens_runtime.advance(lens_case.adapter, lens_case.scope, lens_case.checkpoint)
    caller = lens_runtime.slot(lens_case.adapter).caller
    if caller is None or caller.abandoned is not None:
        from pytest_lens.llm.api_keys import mask_secrets
        from pytest_lens.text import terminal_safe

        pytest.fail(terminal_safe(mask_secrets("\n".join(fault.describe() for fault in faults))), pytrace=False)
    return caller.adapter


def _trace(result: QuestionResult) -> str:
    cut = f" [cut: the first {len(result.answer):,} of {result.answer_chars:,} characters]" if result.answer_chars is not None else ""
    lines = [f"question: {result.prompt}", f"answer: {result.answer or '(empty)'}{cut}", "tool calls:"]
    lines.extend(
        f"  {call.index}. {call.name}({call.arguments}) -> {call.status}, {call.result_tokens} tokens"
        + (f", {call.error}" if call.error else "")
        for call in result.tool_calls
    )
    scored = ", ".join(f"{k}={v:.3f}" for k, v in result.metrics.items())
    lines.append(f"metrics: {scored}" if result.measured else "metrics: none (not measured)")
    return "\n".join(lines)
