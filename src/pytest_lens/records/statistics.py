"""Typed statistics of a run and of a comparison with a baseline (JSON-serialisable, no numpy types)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "INSENSITIVE_TO_THE_MODEL",
    "POWER",
    "AdapterPair",
    "AdapterStatistics",
    "BaselineAdapterComparison",
    "BaselineComparison",
    "BaselineInfo",
    "Ceiling",
    "CeilingRow",
    "ChangeStatus",
    "Estimate",
    "FlippedQuestion",
    "JudgeAgreement",
    "PairedTest",
    "QuestionDelta",
    "RepetitionVariance",
    "RunStatistics",
    "ScopeConcordance",
    "Sensitivity",
    "SensitivityRow",
    "SuspectQuestion",
    "VarianceSplit",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Estimate(_Model):
    """A point estimate and its Student-t confidence interval (absent with fewer than two units)."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int
    #: The standard error (jackknife over the units; ``None``: no interval, or a record written before it was kept).
    se: float | None = None
    #: Degrees of freedom of the interval's t reference (units - 1; ``None``: no interval, or an older record).
    df: int | None = None

    @property
    def has_interval(self) -> bool:
        """Whether an interval could be computed."""
        return self.low is not None and self.high is not None


class AdapterStatistics(_Model):
    """One (adapter, budget): composite, metric means and question-type composites, each with a CI."""

    adapter: str
    budget: str
    composite: Estimate
    metrics: dict[str, Estimate] = Field(default_factory=dict)
    by_type: dict[str, Estimate] = Field(default_factory=dict)


class PairedTest(_Model):
    """A paired test of one score's mean difference over questions paired by key; deltas are second minus first.

    The test is a t-test of ``delta`` against 0: ``delta.value / delta.se`` referred to Student's t with
    ``df`` degrees of freedom, the standard error from the jackknife over the ``units`` (questions, or
    scopes when clustered); ``delta``'s interval, ``drop_bound`` and ``mde`` come from the same numbers.
    """

    metric: str
    n_pairs: int
    n_changed: int
    n_up: int
    n_down: int
    first: float
    second: float
    #: ``second - first``: for the composite, the difference of the two adapter composites over the
    #: paired questions; for a metric, the mean paired difference.
    delta: Estimate
    alternative: Literal["two-sided", "less", "greater"]
    #: The t statistic (``None`` when the standard error is 0: then the p-value is the exact sign-flip one).
    statistic: float | None
    p_value: float
    #: Holm-adjusted over the family of tests it was reported with.
    p_adjusted: float
    #: Matched-pairs rank-biserial correlation of the per-question differences (+1: every change went up).
    effect_size: float
    #: The test, as reports and the comparability card name it (``pytest_lens.analysis.run.paired_test_name``).
    method: str
    #: How the questions were grouped into independent units: ``plain`` (questions), ``clustered`` (whole scopes)
    #: or ``two-stage`` (scopes, with a two-stage bootstrap standard error instead of the jackknife).
    bootstrap: Literal["plain", "clustered", "two-stage"] = "plain"
    #: Independent units behind the standard error, and the t reference's degrees of freedom (``None``: untestable).
    units: int | None = None
    df: int | None = None
    #: Wilcoxon signed-rank p-value of the per-question differences (same alternative): how many questions moved
    #: which way, not by how much; shown beside the test, never deciding.
    signed_rank_p: float | None = None
    #: Minimum detectable effect: the smallest true change of the delta this test detects at ``alpha`` with
    #: :data:`POWER` (one-sided for ``less``/``greater``, two-sided otherwise); ``None`` when nothing varies at all
    #: or when the test cannot detect any change (``detectable``).
    mde: float | None = None
    #: ``False``: with these units the test cannot detect any change the score could show (fewer than two units,
    #: or a minimum detectable effect larger than the largest possible change): no MDE is stated.
    detectable: bool = True
    #: The one-sided ``1 - alpha`` upper confidence bound of the drop (``-delta``): what ``--lens-margin`` holds.
    drop_bound: float | None = None
    #: The level ``mde`` and ``drop_bound`` are computed at.
    alpha: float = 0.05


class AdapterPair(_Model):
    """Two adapters of one run at one budget, paired by (scope, question)."""

    budget: str
    first: str
    second: str
    composite: PairedTest
    metrics: list[PairedTest] = Field(default_factory=list)


class ScopeConcordance(_Model):
    """Kendall's W: whether the scopes rank the adapters alike."""

    budget: str
    adapters: list[str]
    scopes: list[str]
    w: float
    chi_square: float
    p_value: float


#: The power every minimum detectable effect is stated at.
POWER = 0.8


class RunStatistics(_Model):
    """Everything statistical about one run."""

    seed: int
    #: ``plain``: questions are the independent units; ``clustered``: scopes (jackknife over them); ``two-stage``:
    #: scopes, the standard errors from a two-stage bootstrap (scopes, then questions).
    bootstrap: Literal["plain", "clustered", "two-stage"] = "plain"
    #: How many clusters (scopes) were the units (``None`` for plain).
    clusters: int | None = None
    resamples: int
    confidence: float
    #: The score the ``composite`` estimates and tests are of: the run's headline (``retrieval_score`` or ``composite``).
    score: str = "composite"
    adapters: dict[str, AdapterStatistics] = Field(default_factory=dict)
    pairs: list[AdapterPair] = Field(default_factory=list)
    concordance: list[ScopeConcordance] = Field(default_factory=list)


class BaselineInfo(_Model):
    """Where a baseline came from."""

    name: str
    path: str
    created: str
    commit: str | None = None
    machine: str | None = None


class FlippedQuestion(_Model):
    """A question whose pass state changed (``ok``, ``gated``: composite zeroed by a hard gate, ``failed``: adapter or agent fault)."""

    scope_id: str
    question_id: str
    before: str
    after: str
    baseline_composite: float
    composite: float


class QuestionDelta(_Model):
    """One question's change in composite."""

    scope_id: str
    question_id: str
    delta: float


ChangeStatus = Literal["regression", "improvement", "no significant change", "not compared"]


class BaselineAdapterComparison(_Model):
    """One (adapter, budget) of this run against the same in the baseline."""

    key: str
    adapter: str
    budget: str
    #: One-sided test for a drop (``alternative="less"``), Holm-adjusted over the run's adapters.
    regression: PairedTest | None = None
    #: Holm-adjusted one-sided p-value for a rise.
    improvement_p: float | None = None
    metrics: list[PairedTest] = Field(default_factory=list)
    flipped: list[FlippedQuestion] = Field(default_factory=list)
    largest_drops: list[QuestionDelta] = Field(default_factory=list)
    baseline_only: int = 0
    run_only: int = 0
    status: ChangeStatus = "not compared"
    #: The composite fell by more than ``--lens-max-drop``.
    dropped: bool = False
    #: The upper bound of the drop exceeds ``--lens-margin``, or there is none (non-inferiority not shown).
    inferior: bool = False


class BaselineComparison(_Model):
    """A run against a saved run."""

    baseline: BaselineInfo
    alpha: float
    max_drop: float | None = None
    #: ``--lens-margin``: the non-inferiority margin (``None``: no margin gate).
    margin: float | None = None
    #: How the questions were grouped into units (see :attr:`PairedTest.bootstrap`).
    bootstrap: Literal["plain", "clustered", "two-stage"] = "plain"
    #: The score the ``regression`` tests are of: the run's headline (``retrieval_score`` or ``composite``).
    score: str = "composite"
    warnings: list[str] = Field(default_factory=list)
    adapters: list[BaselineAdapterComparison] = Field(default_factory=list)
    #: (adapter, budget) keys of the baseline that this run did not measure.
    missing: list[str] = Field(default_factory=list)
    #: Differences of the two runs' comparability cards that would have refused the comparison, accepted by name
    #: (``--lens-accept-unlike``, ``lens compare --accept-unlike``); the verdict and the gate print them.
    accepted_unlike: list[str] = Field(default_factory=list)

    @property
    def inference(self) -> str:
        """The test the comparisons ran (every adapter's is alike but for its units)."""
        return next((c.regression.method for c in self.adapters if c.regression is not None), "paired t-test")

    @property
    def regressions(self) -> list[BaselineAdapterComparison]:
        """Comparisons that fail the regression gate (:meth:`fails`)."""
        return [c for c in self.adapters if self.fails(c)]

    def fails(self, entry: BaselineAdapterComparison) -> bool:
        """Whether ``entry`` fails the regression gate.

        A drop over ``max_drop`` fails. With a ``margin`` (non-inferiority) the upper bound of the drop alone
        decides, whatever the test of a drop says: over the margin (or no bound at all) fails, within it passes.
        Without one, a significant regression fails, and so does a drop the test could not detect at all: a
        comparison too small to test cannot pass by being too small.
        """
        test = entry.regression
        if test is None:
            return False
        if entry.dropped:
            return True
        if self.margin is not None:
            return entry.inferior
        return entry.status == "regression" or (not test.detectable and test.delta.value < 0)


#: The flag of an empty-extraction row whose drop the run could not detect.
INSENSITIVE_TO_THE_MODEL = "insensitive to what the model built"


class SensitivityRow(_Model):
    """One control of one user adapter: whether this run could tell the adapter from it."""

    #: The user's adapter (summary key) and the control compared with it.
    adapter: str
    control: str
    budget: str
    kind: Literal["null", "random", "oracle", "mutant", "empty-extraction"]
    mutant: str | None = None
    #: What the control does, in a few words (``results truncated to 2``).
    degradation: str
    #: One-sided (``less``) paired test of control minus adapter, by question; ``p_adjusted`` equals ``p_value``.
    test: PairedTest
    #: ``test.p_value < alpha``: a pull request doing this to the adapter would be flagged as a regression.
    detected: bool
    #: The same one-sided test on every per-question metric, Holm-corrected over the row's metrics:
    #: which measurements can see this degradation, whether or not the headline does.
    metrics: list[PairedTest] = Field(default_factory=list)
    #: What the row says about the adapter beyond detected or not: :data:`INSENSITIVE_TO_THE_MODEL` for an
    #: empty-extraction control this run could not tell from the adapter (its score does not fall when the model
    #: builds nothing, so it scores something other than the memory the model built).
    flag: str | None = None


class Sensitivity(_Model):
    """The sensitivity table of a run with ``--lens-controls``."""

    #: The per-question score the tests compare (the headline).
    metric: str
    alpha: float
    rows: list[SensitivityRow] = Field(default_factory=list)


class CeilingRow(_Model):
    """One adapter between the floor and the oracle's ceiling, on the questions all three scored."""

    adapter: str
    budget: str
    #: Questions the adapter, the floor and the oracle all have a headline for.
    n: int
    #: The adapter's mean headline over those questions.
    score: float
    #: ``(score - floor) / (oracle - floor)``: the share of the achievable range reached, with its bootstrap CI
    #: (``None`` when the oracle does no better than the floor).
    share: Estimate | None = None
    #: Questions the oracle passes and the adapter fails (headline below ``fails_below``): the memory's losses.
    memory_losses: int = 0


class SuspectQuestion(_Model):
    """A question even the oracle fails: given its required evidence first, the agent (or the answer key) still loses it."""

    scope_id: str
    question_id: str
    question_type: str
    budget: str
    #: The oracle's headline on it.
    score: float


class Ceiling(_Model):
    """The floor (random) and the ceiling (oracle) of a run's headline, and each adapter between them."""

    #: The per-question score (the section's headline).
    metric: str
    #: The oracle's label, and the floor's (``None``: no random or null control ran; the floor is 0).
    oracle: str
    floor: str | None = None
    #: A question is failed below this headline.
    fails_below: float
    rows: list[CeilingRow] = Field(default_factory=list)
    #: The oracle's mean headline per budget, and the floor's (0 without a floor control).
    oracle_scores: dict[str, float] = Field(default_factory=dict)
    floor_scores: dict[str, float] = Field(default_factory=dict)
    #: Questions the oracle fails: agent or answer-key suspects, apart from every memory's losses.
    suspects: list[SuspectQuestion] = Field(default_factory=list)
    #: Questions the oracle was scored on, per budget (how many ``suspects`` are out of).
    oracle_questions: dict[str, int] = Field(default_factory=dict)


class VarianceSplit(_Model):
    """One score's variance over repeated answers, split into within- and between-question parts.

    ``within``: pooled variance of a question's answers around the question's mean (sum of squares over
    answers minus questions); ``between``: variance of the question means; ``share``: the fraction of the
    total sum of squares that lies within questions, i.e. that comes from answering again rather than from
    asking another question (``None`` when every answer scored the same).
    """

    within: float | None = None
    between: float | None = None
    share: float | None = None


class RepetitionVariance(_Model):
    """How much the answers of one (adapter, budget) move between repetitions of the same question."""

    adapter: str
    budget: str
    #: Answers per question (the most any question got).
    repetitions: int
    questions: int
    answers: int
    #: Per-answer composites (each gated on its own metrics).
    composite: VarianceSplit
    metrics: dict[str, VarianceSplit] = Field(default_factory=dict)


class JudgeAgreement(_Model):
    """``--lens-judge-check``: how far a second judge, grading the same comparisons again, agrees with the run's judge.

    ``kappa``: Cohen's kappa over the verdicts (candidate / tie / reference; ``None`` when undefined: both judges
    gave one and the same verdict throughout). ``positional_bias``: of the comparisons both judges decided (no TIE)
    with the candidate shown in swapped positions, the fraction whose verdict named the same position (A or B) both
    times, i.e. followed the position rather than the content (0 for a consistent judge, 1 for one that always picks
    the same position; ``None`` without such comparisons). ``warning``: why the judge should not be trusted as is.
    """

    judge: str
    check: str
    answers: int
    comparisons: int
    #: Comparisons the second judge could not decide (left out of the agreement).
    failed: int = 0
    agreement: float | None = None
    kappa: float | None = None
    positional_bias: float | None = None
    positional_comparisons: int = 0
    min_kappa: float
    warning: str | None = None
