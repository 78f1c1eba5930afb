"""The planner: a seeded storyline laid down as numeric progressions and discrete events.

It decides *what happened* on every day of the stream and in which order the reports
arrive — values, events, flags, which theme each distractor covers — and nothing about
wording beyond the fixed event sentences. Every random draw comes from one
``random.Random(seed)`` in a fixed order, and only arithmetic (no ``math`` library
calls) shapes the values, so the same seed gives the same plan on every platform.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from pytest_lens.generator.arc import MIN_SIGNAL, arc_position, phase_of, progress
from pytest_lens.generator.facts import format_value, reading_text, value_text
from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, ThemeSpec

__all__ = [
    "EpisodeLabel",
    "EpisodePlan",
    "Filler",
    "Reading",
    "ScopePlan",
    "SignalDay",
    "Storyline",
    "alarm_flag",
    "plan_scope",
    "watch_flag",
]

#: Reports arrive between 06:00 and 22:00.
_DAY_START = 6 * 3600
_DAY_SECONDS = 16 * 3600
#: First calendar day a generated stream may start on, and how many days later at most.
_EPOCH = date(2024, 1, 1)
_START_SPREAD = 730


@dataclass(frozen=True)
class Reading:
    """One measurement on one day, with its printed value."""

    series: SeriesSpec
    value: float
    formatted: str

    @property
    def text(self) -> str:
        """``p99 latency 182 ms``."""
        return reading_text(self.series, self.formatted)


@dataclass(frozen=True)
class Filler:
    """Routine sentences the renderer may add; ``{n}``/``{nn}`` are filled with small numbers."""

    notes: tuple[str, ...]
    changes: tuple[str, ...]
    variables: Mapping[str, str]


@dataclass(frozen=True)
class EpisodePlan:
    """What one report says happened — the renderer's only input besides its own random stream."""

    position: int
    timestamp: datetime
    readings: tuple[Reading, ...]
    changes: tuple[str, ...]
    notes: tuple[str, ...]
    flags: tuple[str, ...]
    filler: Filler


@dataclass(frozen=True)
class EpisodeLabel:
    """Ground truth about one episode, kept out of the dataset (sidecar for tests and analysis)."""

    kind: str
    """``signal`` or ``distractor``."""
    phase: str | None = None
    signal_index: int | None = None
    theme: str | None = None


@dataclass(frozen=True)
class SignalDay:
    """One signal report: its day, its stream position and its storyline readings by role."""

    index: int
    day: date
    position: int
    readings: Mapping[Role, Reading]


@dataclass(frozen=True)
class Storyline:
    """Where the discrete events fell (signal indices, 1-based) and the flag lines used."""

    signal: int
    onset: int
    """First day the primary series is over its watch line."""
    herring_start: int
    herring_end: int
    first_alarm: int
    """First day the secondary series is over its alarm line."""
    root_cause: int
    corroboration: int
    watch: float
    """The primary series' watch line."""
    alarm: float
    """The secondary series' alarm line."""
    herring_watch: float
    """The herring series' watch line (crossed only while the red herring is active)."""


@dataclass(frozen=True)
class ScopePlan:
    """The whole stream of one scope, in stream order, plus the storyline the questions ask about."""

    domain: DomainSpec
    seed: int
    scope_id: str
    variables: Mapping[str, str]
    episodes: tuple[EpisodePlan, ...]
    labels: tuple[EpisodeLabel, ...]
    days: tuple[SignalDay, ...]
    storyline: Storyline

    def day(self, index: int) -> SignalDay:
        """Signal day ``index`` (1-based)."""
        return self.days[index - 1]

    def next_signal_position(self, index: int) -> int:
        """Stream position of the signal report after ``index`` (one past the stream after the last)."""
        return self.days[index].position if index < len(self.days) else len(self.episodes) + 1


def watch_flag(entity: str, reading: str, line: str) -> str:
    """The shared watch-line flag: ``WATCH: geo-lookup p99 latency 262 ms over the 250 ms watch line``."""
    return f"WATCH: {entity} {reading} over the {line} watch line"


def alarm_flag(entity: str, reading: str, line: str) -> str:
    """The shared alarm-line flag."""
    return f"ALARM: {entity} {reading} over the {line} alarm line"


def _wobble(rng: random.Random) -> float:
    """A unit-variance, zero-mean draw (Irwin-Hall of three uniforms): plain arithmetic, same on every platform."""
    return (rng.random() + rng.random() + rng.random() - 1.5) * 2.0


def _level(series: SeriesSpec, at: float, bump: bool) -> float:
    """Relative rise above base at reference position ``at`` (1..30)."""
    gain = series.gain
    if series.shape is Shape.DRIFT:
        early = 0.25 * gain
        if at <= 5:
            return 0.0
        if at <= 15:
            return early * (at - 5) / 10
        if at <= 25:
            step = (at - 15) / 10
            return early + (gain - early) * step * step
        return gain * (1 + 0.02 * (at - 25))
    if series.shape is Shape.CONSEQUENCE:
        if at <= 15:
            return 0.0
        if at <= 25:
            return gain * (at - 15) / 10
        return gain * (1 + 0.03 * (at - 25))
    if series.shape is Shape.BUMP:
        return gain if bump else 0.0
    return 0.0


def _nice_above(value: float, decimals: int) -> float:
    """The first round number (two significant figures) strictly above ``value``."""
    magnitude = 1.0
    while magnitude * 100 <= value:
        magnitude *= 10
    while magnitude * 10 > value and magnitude > 10.0**-decimals:
        magnitude /= 10
    step = max(magnitude, 10.0**-decimals)
    return round((int(value / step) + 1) * step, decimals)


def _bounded(series: SeriesSpec, value: float) -> float:
    """``value`` as printed: rounded to the series' decimals, positive, and at most 100 for a percentage."""
    if series.unit == "%":
        value = min(value, 100.0)
    return round(max(value, 10.0**-series.decimals), series.decimals)


def _format_line(series: SeriesSpec, line: float) -> str:
    return value_text(series, format_value(line, series.decimals))


def _fill(template: str, variables: Mapping[str, str], **extra: object) -> str:
    return template.format(**variables, **extra)


def _choose_variables(rng: random.Random, choices: Mapping[str, Sequence[str]]) -> dict[str, str]:
    return {name: rng.choice(list(choices[name])) for name in sorted(choices)}


@dataclass
class _ThemeState:
    theme: ThemeSpec
    variables: dict[str, str]
    deviation: list[float]
    lines: list[tuple[float, str]]
    """Per series: the watch line and how it prints."""

    @classmethod
    def start(cls, theme: ThemeSpec, variables: dict[str, str]) -> _ThemeState:
        lines = []
        for series in theme.series:
            line = _nice_above(series.base * (1 + 1.6 * series.noise), series.decimals)
            lines.append((line, _format_line(series, line)))
        return cls(theme, variables, [0.0] * len(theme.series), lines)


def plan_scope(
    domain: DomainSpec,
    seed: int,
    *,
    signal: int,
    distractors: int,
    scope_id: str,
    enrich: Callable[[DomainSpec, Mapping[str, str]], DomainSpec] | None = None,
) -> ScopePlan:
    """Lay down the storyline of ``domain`` over ``signal`` reports interleaved with ``distractors``.

    ``enrich`` may add routine filler to the domain once its variables are drawn (the LLM
    planner does); it must not change series, events or themes' series, so the values and
    events are the same with or without it.
    """
    if signal < MIN_SIGNAL:
        raise ValueError(f"signal must be at least {MIN_SIGNAL} episodes, got {signal}")
    if distractors < 0:
        raise ValueError(f"distractors must be 0 or more, got {distractors}")
    rng = random.Random(seed)
    variables = _choose_variables(rng, domain.variables)
    if enrich is not None:
        domain = enrich(domain, variables)
    start = _EPOCH + timedelta(days=rng.randrange(_START_SPREAD))
    storyline, values = _storyline(domain, rng, signal, seed)
    slots = _stream_slots(rng, start, signal, distractors)

    theme_order = iter(_balanced(rng, len(domain.themes), distractors))
    states = [_ThemeState.start(theme, _choose_variables(rng, theme.variables)) for theme in domain.themes]
    domain_filler = Filler(domain.routine_notes, domain.routine_changes, variables)
    escalation_order = list(range(len(domain.escalation)))
    rng.shuffle(escalation_order)

    episodes: list[EpisodePlan] = []
    labels: list[EpisodeLabel] = []
    days: list[SignalDay] = []
    for position, (timestamp, k) in enumerate(slots, start=1):
        if k is not None:
            readings = tuple(Reading(s, values[s][k - 1], format_value(values[s][k - 1], s.decimals)) for s in domain.series)
            by_role = {r.series.role: r for r in readings if r.series.role is not None}
            changes, notes, flags = _signal_events(domain, variables, storyline, k, by_role, escalation_order)
            episodes.append(EpisodePlan(position, timestamp, readings, changes, notes, flags, domain_filler))
            labels.append(EpisodeLabel("signal", phase_of(k, signal).value, k))
            days.append(SignalDay(k, timestamp.date(), position, by_role))
        else:
            state = states[next(theme_order)]
            episodes.append(_distractor_episode(rng, state, position, timestamp))
            labels.append(EpisodeLabel("distractor", theme=state.theme.name))
    return ScopePlan(domain, seed, scope_id, variables, tuple(episodes), tuple(labels), tuple(days), storyline)


#: Noise can, rarely, blur the arc (a line crossed a day late); the values are then redrawn.
_ATTEMPTS = 25


def _storyline(domain: DomainSpec, rng: random.Random, signal: int, seed: int) -> tuple[Storyline, dict[SeriesSpec, list[float]]]:
    """Event positions, every signal series' values, and the lines they cross, redrawn until the arc holds."""
    problem = ""
    for _ in range(_ATTEMPTS):
        found = _draw_storyline(domain, rng, signal)
        if isinstance(found, str):
            problem = found
            continue
        return found
    raise ValueError(f"domain {domain.name!r}: series do not fit the arc in {_ATTEMPTS} draws ({problem}); check the gains and noise")


def _draw_storyline(domain: DomainSpec, rng: random.Random, signal: int) -> tuple[Storyline, dict[SeriesSpec, list[float]]] | str:
    """One draw of :func:`_storyline`, or why it does not fit the arc."""
    herring_start = arc_position(10, signal) + rng.randrange(2)
    herring_end = arc_position(14, signal) + rng.randrange(2)
    root_cause = arc_position(26, signal) + rng.randrange(2)
    corroboration = arc_position(28, signal) + rng.randrange(2)
    bases, values = _signal_values(domain, rng, signal, herring_start, herring_end)
    primary, secondary, herring = (domain.series_for(role) for role in (Role.PRIMARY, Role.SECONDARY, Role.HERRING))

    # Lines sit above everything before the phase in which they are meant to be crossed.
    baseline_end = arc_position(5, signal)
    watch = _nice_above(
        max(max(values[primary][:baseline_end]) * 1.02, bases[primary] * (1 + _level(primary, 6.5, False))), primary.decimals
    )
    alarm = _nice_above(
        max(max(values[secondary][: arc_position(15, signal)]) * 1.04, bases[secondary] * (1 + _level(secondary, 16.5, False))),
        secondary.decimals,
    )
    quiet = [v for k, v in enumerate(values[herring], start=1) if not herring_start <= k <= herring_end]
    herring_watch = _nice_above(max(quiet) * 1.02, herring.decimals)

    onset = next((k for k in range(1, signal + 1) if values[primary][k - 1] > watch), signal + 1)
    first_alarm = next((k for k in range(1, signal + 1) if values[secondary][k - 1] > alarm), signal + 1)
    bumped = all(values[herring][k - 1] > herring_watch for k in range(herring_start, herring_end + 1))
    # The first checkpoint's questions quote two different baseline readings.
    if len(set(values[primary][: arc_position(4, signal)])) < 2:
        return "identical baseline readings"
    # The questions rely on this order: the rise starts before the herring, the alarm after it and early in the escalation.
    if not (baseline_end < onset < herring_start and herring_end < first_alarm <= arc_position(20, signal) and bumped):
        return (
            f"onset {onset}, herring {herring_start}-{herring_end}{'' if bumped else ' without a clear bump'}, "
            f"first alarm {first_alarm} of {signal}"
        )
    story = Storyline(signal, onset, herring_start, herring_end, first_alarm, root_cause, corroboration, watch, alarm, herring_watch)
    return story, values


def _stream_slots(rng: random.Random, start: date, signal: int, distractors: int) -> list[tuple[datetime, int | None]]:
    """Timestamps in stream order, each with its signal index (``None`` for a distractor).

    One signal report per day; distractors spread as evenly as possible over the days; times of
    day drawn at random for every report alike, and the signal report's slot within its day too.
    """
    per_day = [distractors // signal] * signal
    for extra_day in rng.sample(range(signal), distractors % signal):
        per_day[extra_day] += 1
    slots: list[tuple[datetime, int | None]] = []
    for k in range(1, signal + 1):
        day = start + timedelta(days=k - 1)
        count = per_day[k - 1] + 1
        resolution = 60 if count <= _DAY_SECONDS // 60 else 1
        if count > _DAY_SECONDS // resolution:
            raise ValueError(f"{distractors} distractors over {signal} days is more than one report per second; add signal days")
        seconds = sorted(rng.sample(range(0, _DAY_SECONDS, resolution), count))
        signal_slot = rng.randrange(count)
        midnight = datetime(day.year, day.month, day.day)
        for slot, second in enumerate(seconds):
            slots.append((midnight + timedelta(seconds=_DAY_START + second), k if slot == signal_slot else None))
    return slots


def _signal_values(
    domain: DomainSpec, rng: random.Random, signal: int, herring_start: int, herring_end: int
) -> tuple[dict[SeriesSpec, float], dict[SeriesSpec, list[float]]]:
    """Every domain series' base and value on every signal day; bases and gains vary by seed (±15%)."""
    bases: dict[SeriesSpec, float] = {}
    values: dict[SeriesSpec, list[float]] = {}
    for series in domain.series:
        # Shares stay near their printed base (a 94% hit rate must not become 108%); other bases vary ±15%.
        spread = 0.06 if series.unit == "%" else 0.3
        base = series.base * (1 - spread / 2 + spread * rng.random())
        gain_scale = 0.85 + 0.3 * rng.random()
        scaled = replace(series, base=base, gain=series.gain * gain_scale)
        row = []
        for k in range(1, signal + 1):
            level = _level(scaled, progress(k, signal), herring_start <= k <= herring_end)
            value = base * (1 + level) * (1 + series.noise * _wobble(rng))
            # Values are kept as printed, so every comparison below is one a reader could make.
            row.append(_bounded(series, value))
        bases[series] = base
        values[series] = row
    return bases, values


def _signal_events(
    domain: DomainSpec,
    variables: Mapping[str, str],
    story: Storyline,
    k: int,
    readings: Mapping[Role, Reading],
    escalation_order: Sequence[int],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    changes: list[str] = []
    notes: list[str] = []
    flags: list[str] = []

    def place(event: EventSpec, **extra: object) -> None:
        (changes if event.section == "changes" else notes).append(_fill(event.text, variables, **extra))

    if k == story.herring_start:
        place(domain.herring_start)
    if k == story.herring_end:
        place(domain.herring_end)
    if k == story.root_cause:
        place(domain.root_cause)
    if k == story.corroboration:
        place(domain.corroboration)
    primary, secondary, herring = readings[Role.PRIMARY], readings[Role.SECONDARY], readings[Role.HERRING]
    if primary.value > story.watch:
        flags.append(watch_flag(primary.series.entity, primary.text, _format_line(primary.series, story.watch)))
    if herring.value > story.herring_watch:
        flags.append(watch_flag(herring.series.entity, herring.text, _format_line(herring.series, story.herring_watch)))
    if secondary.value > story.alarm:
        flags.append(alarm_flag(secondary.series.entity, secondary.text, _format_line(secondary.series, story.alarm)))
        event = domain.escalation[escalation_order[(k - story.first_alarm) % len(escalation_order)]]
        place(event, value=secondary.formatted)
    return tuple(changes), tuple(notes), tuple(flags)


def _balanced(rng: random.Random, kinds: int, count: int) -> list[int]:
    """``count`` draws from ``range(kinds)``, as even as possible, in a seeded order."""
    if kinds == 0:
        if count:
            raise ValueError("distractors need at least one theme")
        return []
    order = [i % kinds for i in range(count)]
    rng.shuffle(order)
    return order


def _distractor_episode(rng: random.Random, state: _ThemeState, position: int, timestamp: datetime) -> EpisodePlan:
    """A theme report: slowly wandering values (AR(1)), occasional events, flags when a value strays."""
    theme = state.theme
    readings: list[Reading] = []
    flags: list[str] = []
    for i, series in enumerate(theme.series):
        state.deviation[i] = 0.8 * state.deviation[i] + 0.6 * series.noise * _wobble(rng)
        value = _bounded(series, series.base * (1 + state.deviation[i]))
        reading = Reading(series, value, format_value(value, series.decimals))
        readings.append(reading)
        line, printed = state.lines[i]
        if value > line:
            flags.append(watch_flag(series.entity, reading.text, printed))
    notes = [_fill(rng.choice(theme.events), state.variables, n=rng.randint(2, 9), nn=rng.randint(10, 99))] if rng.random() < 0.6 else []
    filler = Filler(theme.routine_notes, theme.routine_changes, state.variables)
    return EpisodePlan(position, timestamp, tuple(readings), (), tuple(notes), tuple(flags), filler)
