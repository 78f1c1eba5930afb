"""Setting a LENS run up: settings in; validated adapters, loaded datasets, the judge, scoring and cases out.

Everything a run is wired from, decided once before the first question: which adapters (and controls) answer,
with which agent and judge, scored how, over which questions, against which ``--lens-baseline``.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_lens.agents import Agent, agent_class
from pytest_lens.contract.registry import AdapterLoadError, accepts_keyword, load_adapter_class
from pytest_lens.controls.plan import ControlsError, mark_oracles, plan_controls
from pytest_lens.datasets.importers import resolve_dataset_path
from pytest_lens.datasets.loader import DatasetError, LoadedDataset, LoadedScope, load_datasets
from pytest_lens.extras import MissingExtra, require_extra
from pytest_lens.llm.api_keys import remember_options
from pytest_lens.llm.errors import LLMCacheError
from pytest_lens.llm.services import LLMServices
from pytest_lens.records.budget import Budget, parse_budget
from pytest_lens.records.cases import LensCase, build_cases
from pytest_lens.records.settings import AdapterSpec, ControlRole, LensSettings
from pytest_lens.runs.storage import Baseline, RunStore, SavedRunError, open_baseline
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate
from pytest_lens.scoring.headline import choose_headline
from pytest_lens.scoring.scorer import GroupMetric, QuestionScorer, Scoring
from pytest_lens.suites.selection import SuiteRun, default_dataset_paths, keep_suites

if TYPE_CHECKING:
    from pytest_lens.judging.judge import Judge

__all__ = ["LensConfigError", "RunSetup", "UnlikeBaselineError", "check_adapters", "open_run"]


class LensConfigError(ValueError):
    """The run cannot be set up; the message says which option or file and what to do."""


class UnlikeBaselineError(LensConfigError):
    """``--lens-baseline`` names a run measured differently (its comparability card differs in a refusing field)."""


class RunSetup:
    """What one run is made of: settings, datasets, budgets, the LLM services, agent, judge, scoring and cases."""

    def __init__(self, settings: LensSettings, datasets: list[LoadedDataset], budgets: list[Budget]) -> None:
        self.settings = settings
        self.datasets = datasets
        self.budgets = budgets
        gates: list[HardGate] = list(DEFAULT_GATES)
        if settings.gate_budget:
            gates.append(HardGate("budget_compliance", 0.5))
        self.llm = LLMServices(settings.llm, seed=settings.seed, rootdir=settings.rootdir)
        self.judge: Judge | None = self._make_judge()
        scorers, self.group_metrics = self._judging()
        self.scoring = Scoring(dict(settings.weights or DEFAULT_WEIGHTS), tuple(gates), scorers)
        #: The score CIs, paired tests, baselines and --lens-fail-under are about (pytest_lens.scoring.headline).
        self.headline = choose_headline(
            settings.headline,
            judged=self.judge is not None,
            weights=self.scoring.weights,
            gates=self.scoring.gates,
            group_metrics=self.group_metrics,
        )
        #: Sibling suites present in the data (MEME, MemoryAgentBench, imported benchmarks), by name.
        self.suites = SuiteRun.for_datasets(
            datasets,
            llm_judge=self.llm.judge_client() if settings.llm.judge == "llm" else None,
            headline=settings.headline,
            llm_agent=settings.agent != "offline",
        )
        #: The user's adapters, then what ``--lens-controls`` adds (null, random, mutants), each with its own label.
        self.adapter_specs: tuple[AdapterSpec, ...] = self._plan_adapters()
        for spec in self.adapter_specs:  # an adapter's key, or its endpoint's, is masked in whatever quotes it
            remember_options(spec.options)
        self.controls: dict[str, ControlRole] = {spec.label: spec.control for spec in self.adapter_specs if spec.control is not None}
        self.cases: list[LensCase] = build_cases([a.label for a in self.adapter_specs], self.scopes, budgets, settings.repeat)
        self._plan_judge_check(scorers)
        #: The ``--lens-baseline`` run, loaded by :func:`open_run`.
        self.baseline: Baseline | None = None

    @property
    def scopes(self) -> list[LoadedScope]:
        """Every scope of every dataset, in load order."""
        return [scope for dataset in self.datasets for scope in dataset.scopes]

    @cached_property
    def agent(self) -> Agent:
        """The answering agent of this process (created on first use)."""
        cls = agent_class(self.settings.agent)
        options = {"lens_llm": self.llm.agent_client()} if accepts_keyword(cls, "lens_llm", via_kwargs=False) else {}
        agent: Agent = cls(**options)
        return agent

    @property
    def concurrency(self) -> int:
        """Questions answered at once (``--lens-concurrency``; else the agent's ``default_concurrency``, else 1)."""
        if self.settings.concurrency is not None:
            return self.settings.concurrency
        default = getattr(self.agent, "default_concurrency", 1)
        return default if isinstance(default, int) and default > 0 else 1

    @property
    def has_significance_tests(self) -> bool:
        """Whether the summary runs paired tests (scipy): two adapters or more, or a ``--lens-baseline``."""
        return len(self.settings.adapters) > 1 or bool(self.settings.baseline)

    def scoring_for(self, case: LensCase) -> Scoring:
        """How ``case`` is scored: its sibling suite's scoring, else LENS's."""
        return self.suites.scoring(case.scope.suite, self.scoring)

    def judge_name(self, case: LensCase) -> str | None:
        """The judge that scores ``case`` (LENS's, or its sibling suite's), by name."""
        if self.scoring_for(case) is self.scoring:
            return self.judge.name if self.judge is not None else None
        suite_judge = self.suites.judge(case.scope.suite)
        return suite_judge.name if suite_judge is not None else None

    def run_store(self) -> RunStore:
        """Saved runs (``--lens-storage``, default ``.lens`` in the rootdir)."""
        root = self.settings.storage
        return RunStore(root if root.is_absolute() else self.settings.rootdir / root)

    def _plan_adapters(self) -> tuple[AdapterSpec, ...]:
        if not self.settings.controls:
            return mark_oracles(self.settings.adapters)
        try:
            return plan_controls(
                self.settings.adapters,
                seed=self.settings.seed,
                mutants=self.settings.mutants,
                first_checkpoints={scope.scope_id: scope.checkpoints[0] for scope in self.scopes if scope.checkpoints},
            )
        except (ControlsError, ValueError) as exc:
            raise LensConfigError(str(exc)) from None

    def _make_judge(self) -> Judge | None:
        kind = self.settings.llm.judge
        if kind == "none":
            return None
        from pytest_lens.judging.judge import LLMJudge, OfflineJudge  # only with --lens-judge

        if kind == "offline":
            return OfflineJudge()
        client = self.llm.judge_client()
        if client is None:
            raise LensConfigError("--lens-judge=llm needs --lens-judge-model=NAME (or --lens-agent-model)")
        return LLMJudge(client, seed=self.settings.seed, max_tokens=self.settings.llm.judge_short_max_tokens)

    def _plan_judge_check(self, scorers: tuple[QuestionScorer, ...]) -> None:
        """``--lens-judge-check=N``: the second judge, and the seeded sample of N answers it grades again."""
        wanted = self.settings.llm.judge_check
        if not wanted or self.settings.llm.judge != "llm" or self.settings.scoring == "v2":
            return
        import random

        from pytest_lens.judging.judge import LLMJudge
        from pytest_lens.judging.judge_scorer import JudgeScorer

        client = self.llm.judge_check_client()
        for scorer in scorers:
            if isinstance(scorer, JudgeScorer) and client is not None:
                judged = [case.item_key for case in self.cases if self.scoring_for(case) is self.scoring]
                scorer.check = LLMJudge(client, seed=self.settings.seed, max_tokens=self.settings.llm.judge_short_max_tokens, swapped=True)
                scorer.checked = frozenset(random.Random(self.settings.seed).sample(judged, min(wanted, len(judged))))

    def _judging(self) -> tuple[tuple[QuestionScorer, ...], tuple[GroupMetric, ...]]:
        """The judge scorer and run-level metrics for ``--lens-judge`` (nothing for ``none``).

        ``--lens-scoring=v2`` scores V2's metrics instead (citation validity even without a judge), and asks the
        judge none of the paper's pairwise questions: they weigh nothing in V2's composite.
        """
        # The judging modules are imported only by runs that judge.
        if self.settings.scoring == "v2":
            from pytest_lens.judging.v2 import V2Scorer

            return (V2Scorer(self.judge),), ()
        if self.judge is None:
            return (), ()
        from pytest_lens.judging.baseline import LLMBaseline, NaiveBaseline, OfflineBaseline
        from pytest_lens.judging.judge_scorer import JudgeScorer, longitudinal_advantage

        # The baseline is the same answerer without memory: the agent's model, or the offline composer.
        agent_client = self.llm.agent_client() if self.settings.agent == "llm" else None
        baseline: NaiveBaseline = (
            LLMBaseline(agent_client, context_tokens=self.settings.llm.context_tokens) if agent_client is not None else OfflineBaseline()
        )
        return (JudgeScorer(self.judge, baseline),), (longitudinal_advantage,)


def open_run(settings: LensSettings) -> RunSetup:
    """Validate adapters, budgets and datasets and wire the run; :class:`LensConfigError` on anything unusable."""
    check_adapters(settings)
    _check_llm_settings(settings)
    try:
        agent_class(settings.agent)
    except ValueError as exc:
        raise LensConfigError(f"--lens-agent: {exc}") from None
    datasets = _load_datasets(settings)
    _check_repeat(settings, datasets)
    setup = RunSetup(settings, datasets, [parse_budget(b) for b in settings.budgets])
    try:
        _ = setup.agent  # built now: a misconfigured agent is one usage error, not a failure per question
        if settings.llm.configured:
            setup.llm.cache.check()
    except (ValueError, LLMCacheError) as exc:
        raise LensConfigError(f"--lens-agent={settings.agent}: {exc}" if isinstance(exc, ValueError) else str(exc)) from None
    if settings.baseline:
        try:
            setup.baseline = open_baseline(settings.baseline, setup.run_store(), (settings.rootdir, Path.cwd()), scored=True)
        except SavedRunError as exc:
            raise LensConfigError(f"--lens-baseline: {exc}") from None
    return setup


def check_adapters(settings: LensSettings) -> None:
    """Every adapter loads, accepts its options and has the extras it needs with them (``lens_extras``)."""
    for spec in settings.adapters:
        try:
            adapter_class = load_adapter_class(spec.target, settings.import_paths)
        except AdapterLoadError as exc:
            raise LensConfigError(f"--lens-adapter={spec.target}: {exc}") from None
        rejected = [name for name in spec.options if not accepts_keyword(adapter_class, name)]
        if rejected:
            raise LensConfigError(
                f"--lens-adapter-option: adapter {spec.label!r} ({spec.target}) does not accept {', '.join(sorted(rejected))}"
            )
        extras = getattr(adapter_class, "lens_extras", None)
        try:
            require_extra(extras(dict(spec.options)) if callable(extras) else (), f"--lens-adapter={spec.target}")
        except MissingExtra as exc:
            raise LensConfigError(str(exc)) from None


def _load_datasets(settings: LensSettings) -> list[LoadedDataset]:
    """``--lens-dataset`` (else the suites' bundled data), validated and filtered by ``--lens-suite``."""
    try:
        paths = [resolve_dataset_path(p, settings.rootdir) for p in settings.datasets] or default_dataset_paths(settings.suites)
    except ValueError as exc:
        raise LensConfigError(f"--lens-suite: {exc}") from None
    try:
        datasets = load_datasets(paths, strict=settings.strict)
    except DatasetError as exc:
        details = "\n".join(f"  {issue}" for issue in exc.issues[:20])
        more = f"\n  ... and {len(exc.issues) - 20} more" if len(exc.issues) > 20 else ""
        files = list(dict.fromkeys(issue.path for issue in exc.issues))
        what = "the dataset" if len(files) == 1 else f"{len(files)} dataset files ({', '.join(files)})"
        raise LensConfigError(f"--lens-dataset: cannot use {what}:\n{details}{more}") from None
    if settings.datasets:
        try:
            datasets = keep_suites(datasets, settings.suites)
        except ValueError as exc:
            raise LensConfigError(f"--lens-suite: {exc}") from None
    return datasets


def _check_llm_settings(settings: LensSettings) -> None:
    """An LLM agent or judge needs a model; say which option to pass."""
    llm = settings.llm
    users = [name for name, used in (("--lens-agent=llm", settings.agent == "llm"), ("--lens-judge=llm", llm.judge == "llm")) if used]
    if users or llm.configured:
        try:
            require_extra("llm", " and ".join(users) or "--lens-llm-base-url/--lens-agent-model (LLM-backed adapters)")
        except MissingExtra as exc:
            raise LensConfigError(str(exc)) from None
    if settings.agent == "llm" and not llm.agent_model:
        raise LensConfigError("--lens-agent=llm needs --lens-agent-model=NAME (and --lens-llm-base-url for a non-OpenAI endpoint)")
    if llm.judge == "llm" and not llm.effective_judge_model:
        raise LensConfigError("--lens-judge=llm needs --lens-judge-model=NAME (or --lens-agent-model)")
    if llm.judge_check and (llm.judge != "llm" or settings.scoring == "v2"):
        raise LensConfigError(
            f"--lens-judge-check={llm.judge_check}: a second judge checks the pairwise LLM judge; it needs --lens-judge=llm "
            "(and the paper's scoring, not --lens-scoring=v2)"
        )


def _check_repeat(settings: LensSettings, datasets: list[LoadedDataset]) -> None:
    """``--lens-repeat`` needs scores that average: MEME's trivial-pass filter pairs single before/after answers."""
    if settings.repeat > 1 and any(dataset.dataset.suite == "meme" for dataset in datasets):
        raise LensConfigError(
            f"--lens-repeat={settings.repeat}: MEME's trivial-pass filter pairs one answer to a before-probe with one to its "
            "after-probe, so its questions cannot be repeated; run MEME without --lens-repeat (or leave out its datasets)"
        )
