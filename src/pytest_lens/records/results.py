"""Typed records of a run: what happened on each question, and the run artifact.

Everything here is JSON-serialisable: results ride on pytest reports (so xdist
can carry them to the controller) and end up in the ``--lens-json`` artifact.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Annotated, Any, Literal, overload

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, PrivateAttr, TypeAdapter, model_validator

from pytest_lens.llm.stats import LLMCounts
from pytest_lens.records.card import ComparabilityCard
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.settings import ControlRole
from pytest_lens.records.statistics import (
    BaselineComparison,
    Ceiling,
    JudgeAgreement,
    RepetitionVariance,
    RunStatistics,
    Sensitivity,
)

__all__ = [
    "ANSWER_CHARS",
    "ARGUMENT_CHARS",
    "ARTIFACT_SCHEMA_VERSION",
    "INLINE_ROWS_SCHEMA_VERSION",
    "LENS",
    "SNIPPET_CHARS",
    "TRANSCRIPT_FIELDS",
    "AdapterFault",
    "AdapterSummary",
    "CommitInfo",
    "EpisodeText",
    "FactCheck",
    "GroupSummary",
    "MachineInfo",
    "MemoryContext",
    "QuestionResult",
    "RecordedVerdict",
    "RefHit",
    "ResultRows",
    "RowsFile",
    "RunArtifact",
    "ScopeEvidence",
    "ScoredResult",
    "ToolCallRecord",
    "Violation",
    "score_problem",
    "scored_results",
]

#: The built-in LENS suite (scored by the core's own tables); a sibling suite has its own name.
LENS = "lens"

#: 2: the per-question rows are a JSON Lines file beside the run document (:attr:`RunArtifact.rows`).
ARTIFACT_SCHEMA_VERSION = 2
#: The single-file artifact written before rows streamed: every result inline, in ``results``; still read.
INLINE_ROWS_SCHEMA_VERSION = 1


def _no_booleans(value: Any) -> Any:
    """Scores are numbers: ``true`` in an artifact is no 1.0 (pydantic would read it as one)."""
    items = value.items() if isinstance(value, dict) else [("score", value)]
    for name, item in items:
        if isinstance(item, bool):
            raise ValueError(f"{name} is {str(item).lower()}, a boolean; scores are numbers")
    return value


#: A score, or scores by metric name, as read from a run artifact: numbers only.
Score = Annotated[float, BeforeValidator(_no_booleans)]
Scores = Annotated[dict[str, float], BeforeValidator(_no_booleans)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


ViolationKind = Literal["result_tokens", "tool_calls", "turns", "agent_tokens"]


class Violation(_Record):
    """A budget limit the agent ran into."""

    kind: ViolationKind
    detail: str
    tool_call: int | None = None


class AdapterFault(_Record):
    """The adapter misbehaved: it raised, returned the wrong type, or hung (``abandoned``: a hung call never ended)."""

    adapter: str
    method: str
    kind: Literal["exception", "bad_return", "timeout", "construct", "abandoned"]
    message: str
    episode_id: str | None = None

    def describe(self) -> str:
        """``adapter 'bm25' raised in search(): ValueError: boom``."""
        verb = {
            "exception": "raised in",
            "bad_return": "returned a wrong value from",
            "timeout": "timed out in",
            "construct": "could not be constructed",
            "abandoned": "was abandoned in",
        }[self.kind]
        where = "" if self.kind == "construct" else f" {self.method}()"
        episode = f" (episode {self.episode_id})" if self.episode_id else ""
        return f"adapter {self.adapter!r} {verb}{where}{episode}: {self.message}"


#: Characters of an agent's answer kept in its result (artifact, transcripts, reports); a longer answer is scored whole,
#: stored cut, and its full length recorded in :attr:`QuestionResult.answer_chars`.
ANSWER_CHARS = 20_000

#: Characters of a tool call's arguments (as JSON) kept in its record; longer ones are kept as their start and length.
ARGUMENT_CHARS = 20_000

#: Characters of each returned text kept in a tool-call record (the full texts of cited and required
#: episodes are kept once per run, in :attr:`RunArtifact.evidence`).
SNIPPET_CHARS = 160


class RefHit(_Record):
    """One ref a tool call returned to the agent: stored id, score (searches) and the start of its text.

    Only a ref's first return in a question keeps a snippet; a later return of it appears here only
    when it has a score (a search) or text the agent had not read yet (a retrieval of the full episode after a
    search's snippet), and otherwise in :attr:`ToolCallRecord.returned_refs` alone: it added nothing.
    """

    ref_id: str
    score: float | None = None
    snippet: str = ""
    #: Characters of the returned text that the question's earlier calls had not shown the agent (all of it on a
    #: first return); ``None`` in artifacts written before this was recorded.
    new_chars: int | None = None


class ToolCallRecord(_Record):
    """One tool call as the bridge executed (or refused) it."""

    index: int
    turn: int
    name: str
    arguments: dict[str, Any]
    status: Literal["ok", "error", "refused"]
    result_tokens: int
    returned_refs: list[str] = Field(default_factory=list)
    #: The returned refs in result order, with scores and snippets (what the agent saw, shortened; see :class:`RefHit`).
    hits: list[RefHit] = Field(default_factory=list)
    #: Result tokens and tool calls the budget still allowed after this call (``None`` in older artifacts).
    result_tokens_left: int | None = None
    calls_left: int | None = None
    error: str | None = None
    duration_ms: float = 0.0


class FactCheck(_Record):
    """A key fact of the question and whether the answer stated it (``fact_recall`` counts these)."""

    fact: str
    found: bool


class MemoryContext(_Record):
    """The block of context an adapter gave the agent at a checkpoint (``context()``), as the agent got it."""

    #: The synthetic ref the manifest's ``context_block`` declares; the agent cites the block by it.
    ref_id: str
    title: str
    text: str
    #: Result tokens the block was charged (UTF-8 bytes // 4, as a tool result).
    tokens: int


class QuestionResult(_Record):
    """Everything measured for one (adapter, scope, budget, question)."""

    adapter: str
    scope_id: str
    checkpoint: int
    question_id: str
    question_type: str
    category: str
    budget: str
    #: The benchmark suite of the question's dataset (``lens``, ``meme``, ``mab``, ``locomo``, ...).
    suite: str = LENS
    agent: str
    judge: str | None = None
    prompt: str
    #: The dataset's reference answer and key facts (for reading transcripts; scoring used the dataset itself).
    canonical_answer: str = ""
    key_facts: list[FactCheck] = Field(default_factory=list)
    # What the agent did; the defaults describe a question where nothing happened (skipped, adapter unbuilt).
    answer: str = ""
    #: The answer's full length in characters when it was longer than :data:`ANSWER_CHARS` and ``answer`` holds only its
    #: start (metrics were computed on the whole answer); ``None``: ``answer`` is the whole answer.
    answer_chars: int | None = None
    cited_refs: list[str] = Field(default_factory=list)
    returned_refs: list[str] = Field(default_factory=list)
    required_refs: list[str] = Field(default_factory=list)
    #: Ids the agent saw and cited instead of stored ids (``--lens-opaque-refs``), alias -> stored id; empty without aliases.
    aliases: dict[str, str] = Field(default_factory=dict)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    #: The adapter's block of context in the agent's prompt (``None``: it gave none); its tokens are in ``result_tokens``.
    context: MemoryContext | None = None
    result_tokens: int = 0
    turns: int = 0
    agent_tokens: int = 0
    violations: list[Violation] = Field(default_factory=list)
    faults: list[AdapterFault] = Field(default_factory=list)
    agent_error: str | None = None
    #: Tool calls the agent got wrong (bad JSON, unknown tool, bad arguments, unknown ref id); each got an error result.
    malformed_tool_calls: int = 0
    defects: list[str] = Field(default_factory=list)
    metrics: Scores = Field(default_factory=dict)
    #: Metrics the data cannot support on this question, and why (absent from ``metrics``, never scored 0).
    absent_metrics: dict[str, str] = Field(default_factory=dict)
    #: The paper's composite of this question (its weights, renormalised over the metrics present; gates applied).
    composite: Score = 0.0
    gated: bool = False
    #: Per-scorer extras (e.g. a judge's per-fact verdicts), keyed by scorer name.
    scorer_details: dict[str, Any] = Field(default_factory=dict)
    #: Scorers that could not score this question (their metrics are absent, never defaulted).
    scoring_failures: list[str] = Field(default_factory=list)
    #: LLM requests made for this question (agent, judge, baseline, adapter summaries); ``None`` when none were.
    llm: LLMCounts | None = None
    #: The cache keys of those requests, sorted (``lens bundle`` takes exactly these entries of the request cache).
    llm_requests: list[str] | None = None
    #: Why the question was not asked (its adapter raised ``AdapterUnavailable``); skipped results are not scored.
    skipped: str | None = None
    #: Why the question could not be measured (the agent could not get an answer from its model: the endpoint and the
    #: error). Such a question is a failed test, left out of composites and statistics, and counted apart.
    not_measured: str | None = None
    #: Seconds answering and scoring the question took, less :attr:`queued_s`.
    duration_s: float = 0.0
    #: Seconds its LLM requests waited for the server to have a free place (other questions' requests were being served).
    queued_s: float = 0.0
    #: Growth of the adapter's ``lens_stats()`` counters while this question ran (its stream's ingest included).
    adapter_stats: dict[str, int] = Field(default_factory=dict)
    #: What the adapter stands for when ``--lens-controls`` added it (``None``: one of the user's adapters).
    control: ControlRole | None = None
    #: Which answer of the question this is (``--lens-repeat``; 0 without repetitions).
    repetition: int = 0

    def with_requests(self, keys: list[str]) -> QuestionResult:
        """The result with the cache keys of more of its LLM requests (itself when there are none)."""
        if not keys:
            return self
        return self.model_copy(update={"llm_requests": sorted({*(self.llm_requests or ()), *keys})})

    @property
    def tool_call_count(self) -> int:
        """Tool calls the agent made (what summaries count; a :class:`ScoredResult` keeps this count, not the calls)."""
        return len(self.tool_calls)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Identity of the question within a run (and across runs, for baselines); repetitions share it."""
        return (self.adapter, self.scope_id, self.budget, self.question_id)

    @property
    def measured(self) -> bool:
        """Asked and answered through the model: what composites, summaries and statistics are computed over."""
        return self.skipped is None and self.not_measured is None

    @property
    def item_key(self) -> tuple[str, str, str, str, int]:
        """Identity of this answer within a run: the question and the repetition."""
        return (*self.key, self.repetition)

    def without_queueing(self, queued_s: float) -> QuestionResult:
        """The result with ``queued_s`` seconds of waiting for the LLM server moved out of :attr:`duration_s`."""
        queued = round(min(max(0.0, queued_s), self.duration_s), 4)
        return self.model_copy(update={"queued_s": queued, "duration_s": round(self.duration_s - queued, 4)})

    @property
    def failed(self) -> bool:
        """The adapter misbehaved, the agent could not finish, or the question could not be measured."""
        return bool(self.faults) or self.agent_error is not None or self.not_measured is not None

    @property
    def evidence_in_hand(self) -> list[str]:
        """Required refs the memory returned to the agent (by any tool call), in the dataset's order."""
        returned = set(self.returned_refs)
        return [ref for ref in self.required_refs if ref in returned]

    @property
    def gated_by_agent(self) -> bool:
        """Whether the agent, not the memory, failed this question.

        A hard gate zeroed it although the memory had returned required evidence (any document, when the question
        requires none): the agent cited nothing it was shown, or gave up.
        """
        if not self.gated or self.failed:
            return False
        return bool(self.evidence_in_hand) if self.required_refs else bool(self.returned_refs)

    def failure_message(self) -> str:
        """Why this question failed, one line per cause."""
        lines = [fault.describe() for fault in self.faults]
        if self.not_measured:
            lines.append(f"not measured: {self.not_measured}")
        if self.agent_error:
            lines.append(f"agent {self.agent!r} failed: {self.agent_error}")
        return "\n".join(lines)


#: What a row read for computing leaves out: the question's transcript, which reports show and no figure adds up, and
#: the cache keys of its requests (which bundles read).
TRANSCRIPT_FIELDS = ("prompt", "canonical_answer", "key_facts", "answer", "tool_calls", "context", "aliases", "llm_requests")


class ScoredResult(QuestionResult):
    """A result read without its transcript (:data:`TRANSCRIPT_FIELDS` left empty): what figures are computed from.

    Summaries, statistics, gates and comparisons read nothing else; its tool calls are counted
    (:attr:`tool_call_count`), not kept. Reading a run's rows this way holds a few kilobytes per question
    instead of tens: ``lens merge`` of 10^5 rows fits in memory (see docs/performance.md).
    """

    _tool_calls: int = PrivateAttr(default=0)

    @property
    def tool_call_count(self) -> int:
        """Tool calls the agent made (counted when the row was read)."""
        return self._tool_calls

    @classmethod
    def of(cls, fields: dict[str, Any], tool_calls: int) -> ScoredResult:
        """A scored result of already validated ``fields`` (every field but the transcript) and its count of tool calls.

        Built as pydantic's ``model_construct`` builds a model, without what makes that cost more than validating the
        row (it inspects each default factory's signature on every call): 10^5 rows are read in seconds.
        """
        result = cls.__new__(cls)
        values = {name: empty() for name, empty in _EMPTY_TRANSCRIPT.items()}
        values.update(fields)
        object.__setattr__(result, "__dict__", values)
        object.__setattr__(result, "__pydantic_fields_set__", set())  # what was read is the record; nothing is "set"
        object.__setattr__(result, "__pydantic_extra__", None)
        object.__setattr__(result, "__pydantic_private__", {"_tool_calls": tool_calls})
        return result


def _empty(name: str) -> Callable[[], Any]:
    """What a transcript field holds in a :class:`ScoredResult`: its default (a fresh one), or ``""`` (``prompt``)."""
    field = QuestionResult.model_fields[name]
    if field.default_factory is not None:
        return field.default_factory  # type: ignore[return-value]  # list, dict: they take no argument
    default = "" if field.is_required() else field.default
    return lambda: default


_EMPTY_TRANSCRIPT = {name: _empty(name) for name in TRANSCRIPT_FIELDS}


#: Metrics that subtract a chance level or a baseline's score, and so may fall below 0.
_SIGNED_METRICS = ("_above_chance", "_advantage")


def score_problem(result: QuestionResult) -> str | None:
    """A score of ``result`` a comparison would misread, as ``name: what is wrong`` (``None`` if there is none).

    The model checks types; this checks ranges: a metric of ``1e308`` would print as ``inf``, one of ``-5`` as a gain of 5.
    """
    scores = {"composite": result.composite, **{f"metrics.{name}": value for name, value in result.metrics.items()}}
    for name, value in scores.items():
        low = -1.0 if name.endswith(_SIGNED_METRICS) else 0.0
        if not (math.isfinite(value) and low <= value <= 1.0):
            return f"{name}: {value!r} is outside [{low:g}, 1]"
    return None


class ResultRows(Sequence[QuestionResult], abc.ABC):
    """A run's per-question rows, in the run's case order: iterated lazily, one full result at a time.

    :class:`ListRows` holds them in memory (a run being finished, a test); ``pytest_lens.records.rows.FileRows`` reads
    a run document's JSON Lines file on every iteration, so iterating a run of 10^5 rows costs time, not memory.
    Indexing a file's rows reads up to the row asked for: for small runs and tests.
    """

    @abc.abstractmethod
    def __iter__(self) -> Iterator[QuestionResult]:
        """Every row, whole (transcript included)."""

    def scored(self) -> Iterator[QuestionResult]:
        """Every row without its transcript (:class:`ScoredResult`) where reading it whole would cost more."""
        return iter(self)

    @abc.abstractmethod
    def lines(self) -> Iterator[bytes]:
        """Every row as one line of compact JSON (without its newline), as a rows file holds it."""

    def pick(self, positions: Collection[int]) -> dict[int, QuestionResult]:
        """The whole rows at ``positions`` (0-based, in the rows' order): only those are read whole."""
        wanted = set(positions)
        return {index: result for index, result in enumerate(self) if index in wanted}

    @overload
    def __getitem__(self, index: int) -> QuestionResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[QuestionResult]: ...

    def __getitem__(self, index: int | slice) -> QuestionResult | list[QuestionResult]:
        return list(self)[index]


class ListRows(ResultRows):
    """Rows held in memory."""

    def __init__(self, results: Iterable[QuestionResult]) -> None:
        self.results = list(results)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[QuestionResult]:
        return iter(self.results)

    def lines(self) -> Iterator[bytes]:
        return (result.model_dump_json().encode("utf-8") for result in self.results)

    @overload
    def __getitem__(self, index: int) -> QuestionResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[QuestionResult]: ...

    def __getitem__(self, index: int | slice) -> QuestionResult | list[QuestionResult]:
        return self.results[index]


def scored_results(rows: Iterable[QuestionResult]) -> Iterator[QuestionResult]:
    """``rows`` as computing reads them: a run's :meth:`ResultRows.scored`, any other collection as it is."""
    return rows.scored() if isinstance(rows, ResultRows) else iter(rows)


_RESULT_LIST = TypeAdapter(list[QuestionResult])


def _as_rows(value: Any) -> ResultRows:
    """A run's rows as given: rows already (a file's, or in memory), or a list of results (or their dicts) kept in memory."""
    if isinstance(value, ResultRows):
        return value
    if isinstance(value, (list, tuple)):
        if all(isinstance(item, QuestionResult) for item in value):
            return ListRows(value)
        return ListRows(_RESULT_LIST.validate_python(value))  # its errors name the row: results.3.adapter
    raise ValueError(f"results must be a run's rows or a list of results, not {type(value).__name__}")


def _headline_defaults_to_composite(data: Any) -> Any:
    """Records written before the headline existed (or by sibling suites) have the composite as their headline."""
    if isinstance(data, dict) and data.get("headline") is None and "composite" in data:
        return {**data, "headline": data["composite"]}
    return data


class GroupSummary(_Record):
    """Means over a group of questions (one adapter, or one question type of it)."""

    n: int
    composite: Score
    metrics: Scores
    #: The run's headline over this group (the composite when that is the headline).
    headline: Score = 0.0

    _default_headline = model_validator(mode="before")(_headline_defaults_to_composite)


class AdapterSummary(_Record):
    """The verdict for one adapter at one budget."""

    adapter: str
    budget: str
    n_questions: int
    #: The paper's composite: its weights over the metric means, renormalised, zeroed by the hard gates.
    composite: Score
    #: ``composite (tier-1 only)`` when no judge-based (tier 2-3) metric was measured, else ``composite``.
    composite_label: str = "composite"
    #: The run's headline score (:mod:`pytest_lens.scoring.headline`): what CIs, paired tests, baselines and
    #: ``--lens-fail-under`` are about. A sibling suite's headline is its own score (in ``composite`` too).
    headline: Score = 0.0
    #: ``retrieval_score`` or ``composite`` (a sibling suite's score is its ``composite``).
    headline_name: str = "composite"
    metrics: Scores
    #: Metrics the data could not support on some questions, and why (see ``QuestionResult.absent_metrics``).
    absent_metrics: dict[str, str] = Field(default_factory=dict)
    gated: bool
    gate_reasons: list[str] = Field(default_factory=list)
    by_type: dict[str, GroupSummary] = Field(default_factory=dict)
    result_tokens_mean: float = 0.0
    tool_calls_mean: float = 0.0
    violations: int = 0
    #: Questions with a fault (the adapter raised, returned a wrong value or hung; or the agent failed): failed tests.
    faults: int = 0
    #: Why the scores cannot be compared (more than ``--lens-max-fault-rate`` of its questions had faults: it measured
    #: a broken adapter); ``None``: comparable.
    not_comparable: str | None = None
    #: Selected questions of this adapter that produced no result (crashed or lost worker, interrupted run).
    missing: int = 0
    #: Questions where a scorer (e.g. the judge) failed, so some of their metrics are absent.
    scoring_failures: int = 0
    #: Questions of this adapter that could not be measured (not in ``n_questions``, the composite or the statistics).
    not_measured: int = 0
    #: The adapter's ``lens_stats()`` counters summed over the questions (and so over xdist workers).
    adapter_stats: dict[str, int] = Field(default_factory=dict)
    #: What the adapter stands for when ``--lens-controls`` added it; controls never gate the run.
    control: ControlRole | None = None
    #: Answers per question (``--lens-repeat``); above 1, composite and metrics are over per-question means.
    repetitions: int = 1

    _default_headline = model_validator(mode="before")(_headline_defaults_to_composite)


class MachineInfo(_Record):
    """The machine a run was measured on (saved runs are grouped by :attr:`machine_id`)."""

    node: str
    system: str
    release: str
    machine: str
    processor: str = ""
    python_implementation: str
    python_version: str
    cpu_count: int | None = None

    @property
    def machine_id(self) -> str:
        """``Linux-CPython-3.11-64bit``: the directory saved runs of this machine kind go to."""
        major_minor = ".".join(self.python_version.split(".")[:2])
        bits = "64bit" if self.machine.endswith("64") else "32bit" if self.machine else "unknown"
        return f"{self.system}-{self.python_implementation}-{major_minor}-{bits}"


class CommitInfo(_Record):
    """The version-control state of the project a run measured."""

    id: str
    branch: str | None = None
    dirty: bool = False


class EpisodeText(_Record):
    """One stored episode as a report shows it."""

    timestamp: str
    text: str


class ScopeEvidence(_Record):
    """A scope's stream length and the texts of the episodes its answers cited or needed (the rest are left out)."""

    episodes: int
    texts: dict[str, EpisodeText] = Field(default_factory=dict)


class RecordedVerdict(_Record):
    """The run's verdict as the summary printed it: exit status, reasons and one line per gate."""

    exit_code: int
    reasons: list[str] = Field(default_factory=list)
    gates: list[str] = Field(default_factory=list)
    #: What the verdict rests on beside its gates (a baseline of an unlike run, compared because its difference was accepted).
    notes: list[str] = Field(default_factory=list)


class RowsFile(_Record):
    """Where a run document's per-question rows are: a JSON Lines file beside it, one result per line, in case order."""

    #: The file's name, in the run document's directory (``run.rows.jsonl`` beside ``run.json``).
    file: str
    format: Literal["jsonl"] = "jsonl"
    #: Rows in the file; ``None`` in the document a run writes when it starts (see
    #: :attr:`RunArtifact.pending`): the run did not finish, and every complete line is a row it recorded.
    count: int | None = None
    #: SHA-256 of the file's bytes (``None`` with ``count``).
    sha256: str | None = None


class RunArtifact(_Record):
    """The ``--lens-json`` run document and its rows: enough to reproduce, compare and audit a run.

    On disk the document (everything here but :attr:`results`) is ``run.json`` and the rows are the JSON Lines file
    :attr:`rows` names, written as each question finished; ``pytest_lens.runs.storage.load_run`` reads both (and the
    single-file artifacts written before, their results inline) and :attr:`results` reads the rows lazily.
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    schema_version: int = ARTIFACT_SCHEMA_VERSION
    pytest_lens_version: str
    created: str
    run: RunIdentity
    #: The per-question rows in case order (every repetition of a question). Not part of the document: written to,
    #: and read from, the rows file.
    results: Annotated[ResultRows, PlainValidator(_as_rows)] = Field(exclude=True)
    #: The rows file (``None`` in memory, before the rows are written, and in single-file artifacts).
    rows: RowsFile | None = None
    summary: dict[str, AdapterSummary]
    incomplete: list[str] = Field(default_factory=list)
    dataset_warnings: list[str] = Field(default_factory=list)
    #: Summaries of the sibling suites' questions (``summary`` holds LENS's), by suite then adapter.
    suite_summaries: dict[str, dict[str, AdapterSummary]] = Field(default_factory=dict)
    machine: MachineInfo | None = None
    commit: CommitInfo | None = None
    #: Confidence intervals and paired tests between adapters (``pytest_lens.analysis``).
    statistics: RunStatistics | None = None
    #: This run against ``--lens-baseline``, when one was given.
    comparison: BaselineComparison | None = None
    #: Per sibling suite: its score's CIs and paired tests, and the run against the baseline's questions of that suite.
    suite_statistics: dict[str, RunStatistics] = Field(default_factory=dict)
    suite_comparisons: dict[str, BaselineComparison] = Field(default_factory=dict)
    #: Per scope: the texts of the episodes cited or required by any question (transcripts link citations to them).
    evidence: dict[str, ScopeEvidence] = Field(default_factory=dict)
    #: The verdict and the gate lines (``None`` in artifacts written before they were recorded).
    verdict: RecordedVerdict | None = None
    #: ``--lens-controls``: what this run can detect, per control of each adapter (the sensitivity table).
    sensitivity: Sensitivity | None = None
    #: With the oracle control: the LENS headline's floor (random) and ceiling (oracle), each adapter between them, and the
    #: questions even the oracle fails (``None`` without an oracle).
    ceiling: Ceiling | None = None
    #: The same per sibling suite, on the suite's headline.
    suite_ceilings: dict[str, Ceiling] = Field(default_factory=dict)
    #: With ``--lens-repeat``: per (adapter, budget), the variance of per-answer scores within and between questions.
    repetitions: list[RepetitionVariance] = Field(default_factory=list)
    #: ``--lens-judge-check``: the run's judge against a second judge on a seeded sample of answers.
    judge_agreement: JudgeAgreement | None = None
    #: Why statistics, comparisons and verdict are missing: this is the copy written before they were computed (their
    #: first import of numpy can kill a process short of memory without an exception). ``None``: the artifact is whole.
    pending: str | None = None

    @property
    def card(self) -> ComparabilityCard:
        """The run's comparability card: as recorded, or derived from its identity and results (runs written before cards)."""
        return self.run.card if self.run.card is not None else self.run.derived_card(self.results)
