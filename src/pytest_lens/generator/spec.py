"""What a generator domain is made of: numeric series, discrete events and the words around them.

A domain is data, not code: the planner turns a :class:`DomainSpec` into day-by-day
values and events over the five-phase arc, the renderer prints them, and the question
builder asks about them. Distractor themes (:class:`ThemeSpec`) use the same series and
note machinery without a storyline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["DomainSpec", "EventSpec", "Role", "SeriesSpec", "Shape", "StoryPhrases", "ThemeSpec"]

#: Day-to-day spread (one standard deviation) of a primary series, in printed units, at least.
_MIN_PRINTED_SPREAD = 5


class Shape(StrEnum):
    """How a series moves over the signal arc."""

    FLAT = "flat"
    """Stationary noise around the base value."""
    DRIFT = "drift"
    """The signal: flat through the baseline, creeping up in the early signal, steep through escalation."""
    CONSEQUENCE = "consequence"
    """Flat until escalation, then climbing to its peak by the root-cause phase."""
    BUMP = "bump"
    """Raised only while the red herring is active, back to base afterwards."""


class Role(StrEnum):
    """The part a series plays in the storyline (the questions ask about these)."""

    PRIMARY = "primary"
    """The drifting measurement whose rise is the signal."""
    SECONDARY = "secondary"
    """The user-visible consequence; crossing its alarm line starts the escalation."""
    HERRING = "herring"
    """Moves with the red herring, making it look guilty."""
    VOLUME = "volume"
    """Throughput that stays flat (rules out the 'more load' explanation)."""
    SUSPECT = "suspect"
    """A plausible alternative cause that stays flat (a negative question asks about it)."""


@dataclass(frozen=True)
class SeriesSpec:
    """One printed measurement of one entity, e.g. ``geo-lookup: p99 latency 182 ms``.

    ``gain`` is the relative rise at the peak (DRIFT, CONSEQUENCE) or during the bump (BUMP);
    ``noise`` the relative day-to-day spread. Labels of series with a role must be unique
    within the domain so that ``"<label> <value>"`` names one measurement.
    """

    entity: str
    label: str
    base: float
    unit: str = ""
    decimals: int = 0
    noise: float = 0.03
    shape: Shape = Shape.FLAT
    gain: float = 0.0
    role: Role | None = None

    def __post_init__(self) -> None:
        # Values are scaled multiplicatively around the base; a zero or negative base has no scale.
        if not self.base > 0:
            raise ValueError(f"series {self.entity!r} {self.label!r}: base must be positive, got {self.base}")


@dataclass(frozen=True)
class EventSpec:
    """A discrete event: a sentence in one section, and the part of it a key fact quotes.

    ``text``, ``fact`` and ``aliases`` are ``str.format`` templates over the domain's variables
    (and ``{value}`` for the escalation notes). ``fact`` must appear in ``text`` (after
    normalisation); aliases are other ways a correct answer may say it.
    """

    text: str
    fact: str
    aliases: tuple[str, ...] = ()
    section: str = "notes"


@dataclass(frozen=True)
class StoryPhrases:
    """Noun phrases the question and answer templates are filled with (templates over the variables)."""

    system: str
    """What is being watched: ``the storefront platform``."""
    area: str
    """The same in generic monitoring words a user would type: ``service health``."""
    consequence: str
    """The visible problem, as a plural or mass noun: ``checkout errors``."""
    primary: str
    """The drifting measurement: ``geo-lookup p99 latency``."""
    herring: str
    """The red herring as a noun phrase: ``the search-indexer v5.3 release``."""
    volume: str
    """The throughput measurement that stays flat: ``checkout request volume``."""
    suspect: str
    """The plausible alternative cause that stays flat: ``disk usage on db-main``."""
    cause: str
    """One clause stating the root cause, for canonical answers."""
    action: str
    """What should be done, for the action recommendation's canonical answer."""
    dependency_question: str
    """A paraphrase of 'are there concerning patterns so far?' in the domain's own words."""
    why_question: str
    """A paraphrase of 'what is the root cause?' in the domain's own words."""
    escalation: str
    """The escalation notes' event as a noun phrase: ``primary pool exhaustion``."""


@dataclass(frozen=True)
class ThemeSpec:
    """A distractor theme: same report format, its own entities and words, no storyline."""

    name: str
    series: tuple[SeriesSpec, ...]
    routine_notes: tuple[str, ...]
    routine_changes: tuple[str, ...]
    events: tuple[str, ...]
    """Occasional notes that make a theme's reports eventful without being signal."""
    topic: str
    """How a distractor-resistance question names this theme's activity."""
    question: str
    """Distractor-resistance prompt template (``{consequence}``, ``{system}``, ``{topic}``)."""
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainSpec:
    """A signal domain: its storyline as series and events, its phrases, its distractor themes."""

    name: str
    code: str
    """Short prefix of question ids (``cf`` for ``cf01_q03_longitudinal``)."""
    description: str
    series: tuple[SeriesSpec, ...]
    herring_start: EventSpec
    herring_end: EventSpec
    escalation: tuple[EventSpec, ...]
    """Field notes for alarm days; every one contains the same ``fact`` phrase."""
    root_cause: EventSpec
    corroboration: EventSpec
    phrases: StoryPhrases
    routine_notes: tuple[str, ...]
    routine_changes: tuple[str, ...]
    themes: tuple[ThemeSpec, ...]
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Values drawn once per scope and substituted into every template."""

    def __post_init__(self) -> None:
        primary = self.series_for(Role.PRIMARY)
        # Baseline questions quote two different primary readings: day-to-day noise must show in print.
        if primary.base * primary.noise * 10**primary.decimals < _MIN_PRINTED_SPREAD:
            raise ValueError(
                f"domain {self.name!r}: primary series {primary.label!r} varies by less than {_MIN_PRINTED_SPREAD} printed units "
                "a day; raise its noise or decimals"
            )

    def series_for(self, role: Role) -> SeriesSpec:
        """The series playing ``role`` (exactly one per role)."""
        found = [series for series in self.series if series.role is role]
        if len(found) != 1:
            raise ValueError(f"domain {self.name!r} needs exactly one {role.value} series, found {len(found)}")
        return found[0]
