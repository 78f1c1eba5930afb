"""A run's identity as its artifact records it: agent, judge, adapters, data, weights, hard gates, headline, seed.

Gates and the headline are data here (:class:`HardGate` objects, :class:`RecordedHeadline`); on disk a gate is still
the string ``"evidence_grounding < 0.5"``, as every saved run has it. An identity read from an artifact writes back
exactly the keys it was read with, in their order: runs saved by earlier versions (which lack later keys) keep their
form, and a new run's artifact is byte for byte what it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from pytest_lens.records.card import ComparabilityCard, SelectedQuestion, endpoint_kind, selection_of

__all__ = ["HardGate", "RecordedHeadline", "RunIdentity", "gate_text", "read_gate"]


@dataclass(frozen=True)
class HardGate:
    """``metric < threshold`` zeroes the composite."""

    metric: str
    threshold: float = 0.5
    #: A mean within this of the threshold meets it. Means summed in different orders differ in their last bits
    #: (0.25, 0.4 five times, 1.0 and 0.75 average 0.49999999999999994 summed left to right, 0.5 summed exactly), and
    #: the summary, the resamples and the leave-one-out values must all gate alike; recorded scores have 6 decimals.
    tolerance: ClassVar[float] = 1e-12

    def fails(self, metrics: Mapping[str, float]) -> str | None:
        """The reason this gate fails, or ``None``."""
        value = metrics.get(self.metric)
        if value is not None and value < self.threshold - self.tolerance:
            return f"{self.metric} {value:.3f} < {self.threshold:g}"
        return None


def gate_text(gate: HardGate) -> str:
    """How an artifact writes a gate: ``"evidence_grounding < 0.5"``."""
    return f"{gate.metric} < {gate.threshold:g}"


def read_gate(value: object) -> HardGate:
    """A gate as an artifact writes it (or already a gate); :class:`ValueError` naming the gate when unreadable."""
    if isinstance(value, HardGate):
        return value
    metric, sep, threshold = str(value).partition("<")
    try:
        gate = HardGate(metric.strip(), float(threshold))
    except ValueError:
        raise ValueError(f"cannot read hard gate {value!r} (expected 'metric < number')") from None
    if not sep or not gate.metric:
        raise ValueError(f"cannot read hard gate {value!r} (expected 'metric < number')")
    return gate


def _read_gates(value: object) -> object:
    return [read_gate(item) for item in value] if isinstance(value, list) else value


def _write_gates(gates: list[HardGate] | None) -> list[str] | None:
    return None if gates is None else [gate_text(gate) for gate in gates]


#: Hard gates as data, read from and written as ``"metric < threshold"``.
RecordedGates = Annotated[list[HardGate] | None, BeforeValidator(_read_gates), PlainSerializer(_write_gates)]


class _AsRecorded(BaseModel):
    """Written back with the keys it was given (declared and extra), in the order it was given them."""

    model_config = ConfigDict(extra="allow")
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        found = handler(data)
        if isinstance(data, Mapping) and isinstance(found, _AsRecorded):
            found._order = tuple(data)
        return found

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        given = self.model_fields_set | set(self.model_extra or {})
        keys = [*self._order, *(key for key in data if key not in self._order)]
        return {key: data[key] for key in keys if key in given and key in data}


class RecordedHeadline(_AsRecorded):
    """The run's headline score (:class:`pytest_lens.scoring.headline.Headline`): name, weights and hard gates."""

    name: str = "composite"
    weights: dict[str, float] | None = None
    gates: RecordedGates = None


class AgentIdentity(_AsRecorded):
    """The answering agent or the judge, as the summary names it."""

    name: str = ""
    description: str = ""


class RunIdentity(_AsRecorded):
    """What a run measured and how (``RunArtifact.run``); a baseline comparison warns where two runs differ.

    Every field is optional: runs saved by earlier versions lack the later ones. Keys this version does not
    know (an older or newer version's) are kept as they are.
    """

    agent: AgentIdentity | None = None
    judge: AgentIdentity | None = None
    #: Per sibling suite, what judged its questions (``name``, ``description``).
    suite_judges: dict[str, dict[str, Any]] | None = None
    #: Per sibling suite, the headline its section, statistics and worst questions use (``None``, or a suite missing:
    #: the suite's own score, as every run had before the retrieval score headed suites under the offline agent).
    suite_headlines: dict[str, RecordedHeadline] | None = None
    #: The LLM endpoint, models and request counts (``None`` without one).
    llm: dict[str, Any] | None = None
    #: Each budget's limits (``pytest_lens.records.budget.Budget``'s fields).
    budgets: list[dict[str, Any]] | None = None
    #: ``label``, ``target``, ``options`` and, for controls, ``control``.
    adapters: list[dict[str, Any]] | None = None
    #: ``path``, ``sha256``, ``suite``, ``scopes``.
    datasets: list[dict[str, Any]] | None = None
    #: The composite's weights (``None``: a run saved before they were recorded, with the paper's).
    weights: dict[str, float] | None = None
    #: The composite's hard gates (``None``: a run saved before they were recorded, with the defaults).
    gates: RecordedGates = None
    #: The headline (``None``: a run saved before there was a headline, whose headline was the composite).
    headline: RecordedHeadline | None = None
    seed: int | None = None
    repeat: int | None = None
    python: str | None = None
    platform: str | None = None
    #: ``lens report A B``: the runs merged into this one (``lens merge``: the shards).
    merged_from: list[str] | None = None
    #: ``--lens-shard=I/N``: which shard, its stream groups, the split and pytest's selection it ran under, its settings,
    #: code and adapter versions, the questions it left without a result and those its selection left out (``lens merge``
    #: checks and joins shards by these).
    shard: dict[str, Any] | None = None
    #: ``--lens-resume``: the directory, how many stream groups were reused, the questions ``--lens-rerun`` asked again,
    #: the units whose kept file was altered, and those that could not be kept.
    resumed: dict[str, Any] | None = None
    #: The run's settings as JSON data, secrets masked (``pytest_lens.runs.slicing.settings_record``): ``lens reproduce`` sets
    #: the run up again from them. ``None`` in runs written before they were recorded.
    settings: dict[str, Any] | None = None
    #: What the run's numbers depend on (:mod:`pytest_lens.records.card`); ``None`` in runs written before cards.
    card: ComparabilityCard | None = None

    @property
    def headline_name(self) -> str:
        """The headline's name; runs saved before there was a headline had the composite."""
        return self.headline.name if self.headline is not None else "composite"

    def derived_card(
        self, questions: Iterable[SelectedQuestion], *, scoring: str | None = None, test: str | None = None
    ) -> ComparabilityCard:
        """The comparability card of this identity and the ``questions`` selected (``scoring`` and ``test`` when known).

        A run builds its card with this; a run written before cards gets one derived from what it recorded
        (fields it never recorded stay unknown).
        """
        selection, categories = selection_of(list(questions))
        return ComparabilityCard(
            data=self._card_data(),
            selection=selection if selection.questions else None,
            budget=[_budget_text(budget) for budget in self.budgets or []],
            agent=self._card_agent(),
            judge=self._card_judge(),
            scoring=scoring,
            headline=self.headline_name,
            test=test,
            categories=categories,
            repetitions=self.repeat,
            seed=self.seed,
        )

    def _card_data(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for entry in self.datasets or []:
            name = PurePath(str(entry.get("path", "?"))).name or "?"
            while name in found:  # two files of one name in different directories
                name += "'"
            found[name] = str(entry.get("sha256", ""))
        return found

    def _model(self, field: str) -> str:
        llm = self.llm or {}
        return f"{llm.get(field) or '?'} ({endpoint_kind(llm.get('base_url'))})"

    def _card_agent(self) -> str | None:
        if self.agent is None:
            return None
        return f"llm {self._model('agent_model')}" if self.agent.name == "llm" else self.agent.name or self.agent.description

    def _card_judge(self) -> str | None:
        if "judge" not in self.model_fields_set and "judge" not in (self.model_extra or {}):
            return None
        judge = self.judge
        found = "none" if judge is None else f"llm {self._model('judge_model')}" if judge.name == "llm" else judge.name or judge.description
        suites = [f"{name} {entry.get('name', '?')}" for name, entry in sorted((self.suite_judges or {}).items())]
        return "; ".join([found, *suites])


def _budget_text(budget: dict[str, Any]) -> str:
    """``16k (result_token_cap 16,384, max_turns 10, ...)``: a recorded budget's name and every limit."""
    limits = ", ".join(f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}" for key, value in budget.items() if key != "name")
    return f"{budget.get('name', '?')} ({limits})"
