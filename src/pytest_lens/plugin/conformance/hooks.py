"""The conformance suite in pytest: options, the ``lens_conformance`` marker and fixture, built-in tests, summary.

Loaded with the main plugin on every run, so it imports nothing heavy: hypothesis
and the clauses are imported when a conformance test runs.

- ``pytest --lens-adapter=X --lens-conformance`` adds ``lens-conformance::test_<clause>[<adapter>]``
  for every clause and configured adapter, instead of the LENS questions.
- In your own test module::

      import pytest

      @pytest.mark.lens_conformance("mypkg.memory:MyAdapter", clauses=["retrieve", "search.limit"])
      def test_contract(lens_conformance):
          lens_conformance.check()

  runs once per selected clause (all clauses without ``clauses=``); without a target the
  ``--lens-adapter`` adapters are used.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_lens.plugin.conformance import options
from pytest_lens.records.settings import AdapterSpec

if TYPE_CHECKING:
    from pytest_lens.conformance.clause import Clause
    from pytest_lens.conformance.results import ClauseOutcome

__all__ = ["BUILTIN_NODEID", "OUTCOME_PROPERTY", "ConformanceCase", "ConformanceCheck"]

#: Node id of the built-in conformance test module.
BUILTIN_NODEID = "lens-conformance"
#: ``user_properties`` name under which a clause's outcome travels on its test report.
OUTCOME_PROPERTY = "lens_conformance"
MARKER = "lens_conformance"
def missing_dependency() -> str | None:
    """Why the conformance suite cannot run in this environment (hypothesis, an extra, is absent), or ``None``."""
    from pytest_lens.extras import missing_extra

    return missing_extra("conformance", "the conformance suite")


@dataclass
class _State:
    settings: options.ConformanceSettings
    outcomes: dict[tuple[str, str], ClauseOutcome]
    #: Adapters whose expected duration this process has announced (once each, before their first clause).
    announced: set[str] = field(default_factory=set)


_STATE = pytest.StashKey[_State]()


@dataclass(frozen=True)
class ConformanceCase:
    """One clause to check against one adapter."""

    spec: AdapterSpec
    clause_id: str


@dataclass(frozen=True)
class _Unavailable:
    """A conformance test that cannot run here, and why."""

    spec: AdapterSpec
    reason: str


class ConformanceCheck:
    """What the ``lens_conformance`` fixture gives a test: one clause bound to one adapter."""

    def __init__(self, case: ConformanceCase, request: pytest.FixtureRequest, storage: Path) -> None:
        self.case = case
        self._request = request
        self._storage = storage

    @property
    def adapter(self) -> str:
        """The adapter's label."""
        return self.case.spec.label

    @property
    def clause(self) -> Clause:
        """The clause this test checks."""
        from pytest_lens.conformance.catalog import find_clause

        return find_clause(self.case.clause_id)

    def check(self) -> ClauseOutcome:
        """Run the clause and return its outcome.

        Fails the test with the clause, method and minimal example when the adapter
        breaks it, skips the test when the clause does not apply, and warns
        (``LensLatencyWarning``) about latency over an advisory ceiling.
        """
        from pytest_lens.conformance.latency import LensLatencyWarning
        from pytest_lens.conformance.subject import SubjectFactory
        from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
        from pytest_lens.execution.runner import safe_name

        config = self._request.config
        settings = _state(config).settings
        clause = self.clause
        storage = self._storage / f"{safe_name(self.adapter)}-{clause.id}"
        factory = SubjectFactory(self.case.spec, storage, call_timeout=_call_timeout(config), lens_llm=_lens_llm(config))
        profile = settings.profile or _default_profile()
        from pytest_lens.plugin.terminal_progress import progress_interval, progress_sink

        sink = progress_sink(config)
        if sink is not None and self.adapter not in _state(config).announced:
            _state(config).announced.add(self.adapter)
            probe_storage = self._storage / f"{safe_name(self.adapter)}-estimate"
            probe = SubjectFactory(self.case.spec, probe_storage, call_timeout=factory.call_timeout, lens_llm=factory.lens_llm)
            _announce_duration(self._request.session, self.case.spec, probe, profile, sink)
        outcome = verify_clause(
            clause,
            factory,
            ConformanceConfig(
                profile,
                settings.latency_ceilings,
                settings.enforce_latency,
                progress=sink,
                progress_interval_s=progress_interval(config),
            ),
        )
        node = self._request.node
        node.user_properties.append((OUTCOME_PROPERTY, outcome.model_dump(mode="json")))
        node.add_report_section("call", "lens conformance", _details(outcome))
        for advisory in outcome.advisories:
            warnings.warn(LensLatencyWarning(f"adapter {self.adapter!r}: {advisory}"), stacklevel=2)
        if outcome.status == "failed":
            pytest.fail(outcome.message, pytrace=False)
        if outcome.status == "not_applicable":
            pytest.skip(outcome.message)
        return outcome


def _announce_duration(session: pytest.Session, spec: AdapterSpec, factory: Any, profile: str, sink: Any) -> None:
    """Say how long this process's clauses of ``spec`` should take, from the adapter's first calls (nothing if it cannot tell)."""
    from pytest_lens.conformance.catalog import find_clause
    from pytest_lens.conformance.estimate import estimate_suite
    from pytest_lens.contract.adapter import AdapterUnavailable
    from pytest_lens.execution.calls import AdapterCallError

    clause_ids = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("lens_conformance") if callspec is not None else None
        if isinstance(case, ConformanceCase) and case.spec == spec and case.clause_id not in clause_ids:
            clause_ids.append(case.clause_id)
    manifest, fault = factory.manifest()
    if fault is not None or factory.unavailable:
        return  # the clauses say why, one by one
    sink(f"lens conformance [{spec.label}]: timing its first calls to estimate the suite's duration")
    try:
        estimate = estimate_suite(factory, [find_clause(clause_id) for clause_id in clause_ids], profile, manifest)
    except (AdapterCallError, AdapterUnavailable) as exc:
        sink(f"lens conformance [{spec.label}]: no estimate: its first calls failed ({exc}); the clauses will say how")
        return
    sink(estimate.line())


def _default_profile() -> str:
    from pytest_lens.conformance.profiles import default_profile

    return default_profile()


def _call_timeout(config: pytest.Config) -> float | None:
    from pytest_lens.plugin.hooks import SESSION_KEY

    session = config.stash.get(SESSION_KEY, None)
    return session.settings.call_timeout if session is not None else 120.0


def _lens_llm(config: pytest.Config) -> Any:
    """The run's LLM client for LLM-backed adapters (``None`` without an endpoint, or outside a LENS run)."""
    from pytest_lens.plugin.hooks import SESSION_KEY

    session = config.stash.get(SESSION_KEY, None)
    return session.setup.llm.component_client() if session is not None else None


def _details(outcome: ClauseOutcome) -> str:
    from pytest_lens.conformance.latency import latency_stats

    lines = [
        f"clause {outcome.clause} ({outcome.status}): {outcome.contract}",
        f"{outcome.examples} examples, {outcome.instances} adapter instances, {outcome.duration_s:.2f} s, profile {outcome.profile}",
    ]
    lines.extend(
        f"  {stat.method}: {stat.calls} calls, p50 {stat.p50 * 1000:.2f} ms, p95 {stat.p95 * 1000:.2f} ms, max {stat.max * 1000:.2f} ms"
        for stat in latency_stats(outcome.latencies)
    )
    return "\n".join(lines)


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# -- hooks ---------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    """``--lens-conformance``, ``--lens-hypothesis-profile``, ``--lens-latency-ceiling``, ``--lens-latency-enforce``."""
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and read the options; ``--lens-conformance`` needs an adapter."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(target=None, *, clauses=None, options=None, label=None): run conformance clauses against an adapter "
        "(module:Class or a registered name; default: the --lens-adapter adapters) in a test using the lens_conformance fixture.",
    )
    settings = options.read_conformance_settings(config)
    if settings.builtin:
        from pytest_lens.plugin import options as lens_options

        if not lens_options.lens_requested(config):
            raise pytest.UsageError(
                f"{options.CONFORMANCE} needs an adapter: add {lens_options.ADAPTER}=module:Class (or a registered name)"
            )
        if (missing := missing_dependency()) is not None:
            raise pytest.UsageError(f"{options.CONFORMANCE}: {missing}")
    if settings.profile is not None and (settings.builtin or config.getoption(options.HYPOTHESIS_PROFILE)) and missing_dependency() is None:
        from pytest_lens.conformance.profiles import profile_name

        try:
            profile_name(settings.profile)
        except ValueError as exc:
            raise pytest.UsageError(f"{options.HYPOTHESIS_PROFILE}: {exc}") from None
    state = config.stash[_STATE] = _State(settings, {})
    config.pluginmanager.register(_OutcomeCollector(config, state), "lens-conformance-outcomes")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize tests using the ``lens_conformance`` fixture over (adapter, clause)."""
    if "lens_conformance" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    config = metafunc.config
    import_paths = (Path(config.invocation_params.dir), Path(config.rootpath))
    specs = _marker_specs(marker, import_paths) if marker is not None and _marker_targets(marker) else _configured_specs(metafunc.config)
    if not specs:
        return  # the fixture explains that no adapter is configured
    if (missing := missing_dependency()) is not None:
        # The clauses cannot even be listed without hypothesis: one test per adapter fails and says what to install.
        metafunc.parametrize(
            "lens_conformance", [_Unavailable(spec, missing) for spec in specs], ids=[s.label for s in specs], indirect=True
        )
        return
    from pytest_lens.conformance.catalog import select_clauses

    try:
        clauses = select_clauses(_as_list(marker.kwargs.get("clauses")) if marker is not None else None)
    except KeyError as exc:
        raise pytest.UsageError(f"@pytest.mark.{MARKER}(clauses=...): {exc.args[0]}") from None
    cases = [ConformanceCase(spec, clause.id) for spec in specs for clause in clauses]
    # One clause per test function (the built-in module): the adapter is the id; else adapter-clause.
    ids = [case.spec.label if len(clauses) == 1 else f"{case.spec.label}-{case.clause_id}" for case in cases]
    metafunc.parametrize("lens_conformance", cases, ids=ids, indirect=True)


class _ConformanceModule(pytest.Module):
    """The built-in conformance module; collects its ``test_*`` functions whatever ``python_functions`` says."""

    def funcnamefilter(self, name: str) -> bool:
        return name.startswith("test_")

    def classnamefilter(self, name: str) -> bool:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the built-in conformance tests with ``--lens-conformance``; mark every conformance test.

    Runs first so that ``-k``, ``-m`` and ``--deselect`` filter our items like any others.
    """
    if _state(config).settings.builtin:
        # Found by path, not imported: the module imports this one (pytest imports it as it collects it).
        module = _ConformanceModule.from_parent(session, path=Path(__file__).with_name("_builtin_tests.py"), nodeid=BUILTIN_NODEID)
        collected = [item for item in module.collect() if isinstance(item, pytest.Item)]
        # Reported like any collected module, so that "collected N items" counts them.
        session.ihook.pytest_collectreport(report=pytest.CollectReport(BUILTIN_NODEID, "passed", None, list(collected)))
        items.extend(collected)
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and isinstance(callspec.params.get("lens_conformance"), ConformanceCase):
            item.add_marker(MARKER)


class _OutcomeCollector:
    """Collects clause outcomes from test reports (on the controller under xdist) and prints the summary."""

    def __init__(self, config: pytest.Config, state: _State) -> None:
        self.config = config
        self.state = state

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Keep the outcome (with every call's latency) off the teardown report, which ``--junitxml`` writes out."""
        report = yield
        if report.when == "teardown":
            report.user_properties = [(name, value) for name, value in report.user_properties if name != OUTCOME_PROPERTY]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the outcome a conformance test attached to its call report."""
        if report.when != "call" or _is_worker(self.config):
            return
        for name, value in report.user_properties:
            if name == OUTCOME_PROPERTY:
                from pytest_lens.conformance.results import ClauseOutcome

                outcome = ClauseOutcome.model_validate(value)
                self.state.outcomes[(outcome.adapter, outcome.clause)] = outcome

    def pytest_report_header(self) -> list[str]:
        """What the conformance run checks, when the built-in suite is on."""
        if not self.state.settings.builtin:
            return []
        from pytest_lens.conformance.catalog import CLAUSES
        from pytest_lens.conformance.profiles import profile_name

        profile = profile_name(self.state.settings.profile or _default_profile())
        return [f"lens conformance: {len(CLAUSES)} clauses per adapter, hypothesis profile {profile}; LENS questions not added"]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the conformance summary when any clause ran."""
        if _is_worker(self.config) or not self.state.outcomes:
            return
        from pytest_lens.conformance.report import conformance_lines

        terminalreporter.write_sep("=", "LENS conformance")
        outcomes = sorted(self.state.outcomes.values(), key=lambda o: (o.adapter, _clause_order(o.clause)))
        from pytest_lens.text import terminal_safe

        for line in conformance_lines(outcomes, self.state.settings.latency_ceilings, self.state.settings.enforce_latency):
            terminalreporter.write_line(terminal_safe(line))


def _clause_order(clause_id: str) -> int:
    from pytest_lens.conformance.catalog import CLAUSES

    return next((index for index, clause in enumerate(CLAUSES) if clause.id == clause_id), len(CLAUSES))


# -- adapters --------------------------------------------------------------------------------
def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value]


def _marker_targets(marker: pytest.Mark) -> list[str]:
    return _as_list(marker.args[0] if marker.args else marker.kwargs.get("target"))


def _marker_specs(marker: pytest.Mark, import_paths: Sequence[Path] = ()) -> list[AdapterSpec]:
    from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
    from pytest_lens.records.settings import parse_adapter_spec

    specs = []
    for text in _marker_targets(marker):
        label, target = parse_adapter_spec(text)
        try:
            load_adapter_class(target, import_paths)
        except AdapterLoadError as exc:
            raise pytest.UsageError(f"@pytest.mark.{MARKER}({text!r}): {exc}") from None
        default = target.rpartition(":")[2].rpartition(".")[2] if ":" in target else target
        specs.append(AdapterSpec(marker.kwargs.get("label") or label or default, target, dict(marker.kwargs.get("options") or {})))
    return specs


def _configured_specs(config: pytest.Config) -> list[AdapterSpec]:
    from pytest_lens.plugin.hooks import SESSION_KEY

    session = config.stash.get(SESSION_KEY, None)
    return list(session.setup.adapter_specs) if session is not None else []


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def lens_conformance_storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Root of the private storage directories of the adapter instances the conformance suite builds."""
    return tmp_path_factory.mktemp("lens-conformance")


@pytest.fixture
def lens_conformance(request: pytest.FixtureRequest, lens_conformance_storage: Path) -> ConformanceCheck:
    """One conformance clause bound to one adapter; call ``.check()`` (pytest-lens parametrizes this fixture)."""
    case = getattr(request, "param", None)
    if isinstance(case, _Unavailable):
        pytest.fail(f"{MARKER} ({case.spec.label}): {case.reason}", pytrace=False)
    if not isinstance(case, ConformanceCase):
        from pytest_lens.plugin import options as lens_options

        pytest.fail(
            f"lens_conformance has no adapter: give the test @pytest.mark.{MARKER}('module:Class'), "
            f"or run with {lens_options.ADAPTER}=module:Class",
            pytrace=False,
        )
    return ConformanceCheck(case, request, lens_conformance_storage)
