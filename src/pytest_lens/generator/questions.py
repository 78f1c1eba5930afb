"""The 24 questions of a generated scope: all ten LENS types at six checkpoints spread over the stream.

Every question is built from the plan, not from the text: its key facts quote values and
event phrases exactly as the renderer prints them, its required refs are the signal
reports holding those facts, and its checkpoint comes after all of them. Longitudinal
questions take their facts from different phases, so no single report answers them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_lens.datasets.models import GroundTruth, KeyFact, Question
from pytest_lens.generator.arc import arc_position
from pytest_lens.generator.facts import date_fact, date_text, reading_fact, value_fact, value_text
from pytest_lens.generator.planner import Reading, ScopePlan
from pytest_lens.generator.spec import EventSpec, Role, SeriesSpec

__all__ = ["QUESTION_MIX", "STAGES", "build_questions", "episode_id"]

#: Questions per type, as in the reference scope.
QUESTION_MIX: dict[str, int] = {
    "longitudinal": 4,
    "negative": 3,
    "paraphrase": 3,
    "temporal": 3,
    "distractor_resistance": 3,
    "null_hypothesis": 2,
    "counterfactual": 2,
    "evidence_sufficiency": 2,
    "action_recommendation": 1,
    "severity_assessment": 1,
}

#: Checkpoint stages: the reference signal position (1..30) each stage follows; the last stage ends the stream.
STAGES = (4, 11, 16, 21, 28, 30)


def episode_id(scope_id: str, position: int, total: int) -> str:
    """``<scope>_e007``: numbered by stream position only, so the id says nothing about the episode's role."""
    return f"{scope_id}_e{position:0{max(3, len(str(total)))}d}"


@dataclass(frozen=True)
class _Draft:
    stage: int
    question_type: str
    prompt: str
    answer: str
    refs: tuple[int, ...]
    """Signal indices."""
    facts: tuple[KeyFact, ...]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _separate(topic: str, system: str) -> str:
    return f"The reports on {topic} are a separate stream that says nothing about {system}."


class _Builder:
    """Fact and phrase helpers over one plan."""

    def __init__(self, plan: ScopePlan, rng: random.Random) -> None:
        self.plan = plan
        self.rng = rng
        domain = plan.domain
        self.v = dict(plan.variables)
        phrases = domain.phrases
        self.system = self.fill(phrases.system)
        self.area = self.fill(phrases.area)
        self.consequence = self.fill(phrases.consequence)
        self.primary = self.fill(phrases.primary)
        self.herring = self.fill(phrases.herring)
        self.volume = self.fill(phrases.volume)
        self.suspect = self.fill(phrases.suspect)
        self.cause = self.fill(phrases.cause)
        self.story = plan.storyline
        primary = domain.series_for(Role.PRIMARY)
        secondary = domain.series_for(Role.SECONDARY)
        self.watch = value_text(primary, f"{self.story.watch:.{primary.decimals}f}")
        self.alarm = value_text(secondary, f"{self.story.alarm:.{secondary.decimals}f}")
        self.secondary_name = f"{secondary.entity} {secondary.label}"

    def fill(self, template: str, **extra: object) -> str:
        return template.format(**self.v, **extra)

    def reading(self, role: Role, k: int) -> Reading:
        return self.plan.day(k).readings[role]

    def said(self, role: Role, k: int) -> str:
        """``p99 latency 182 ms on 2025-03-08``."""
        return f"{self.reading(role, k).text} on {self.date(k)}"

    def date(self, k: int) -> str:
        return date_text(self.plan.day(k).day)

    def fact(self, role: Role, k: int) -> KeyFact:
        reading = self.reading(role, k)
        return reading_fact(reading.series, reading.formatted)

    def event(self, event: EventSpec, **extra: object) -> KeyFact:
        return KeyFact(fact=self.fill(event.fact, **extra), aliases=tuple(self.fill(alias, **extra) for alias in event.aliases))

    def event_text(self, event: EventSpec) -> str:
        return self.fill(event.text).rstrip(".")

    def alarm_fact(self) -> KeyFact:
        return self.event(self.plan.domain.escalation[0])

    def alarm_phrase(self) -> str:
        return self.fill(self.plan.domain.phrases.escalation)

    def distinct(self, role: Role, candidates: Sequence[int], count: int, avoid: Sequence[int] = ()) -> list[int]:
        """``count`` days from ``candidates`` whose ``role`` readings print differently (from each other and ``avoid``)."""
        seen = {self.reading(role, k).formatted for k in avoid}
        pool = list(candidates)
        self.rng.shuffle(pool)
        chosen: list[int] = []
        for k in pool:
            formatted = self.reading(role, k).formatted
            if formatted not in seen:
                chosen.append(k)
                seen.add(formatted)
            if len(chosen) == count:
                return sorted(chosen)
        raise ValueError(f"cannot find {count} days with distinct {role.value} readings among {list(candidates)}")


def build_questions(plan: ScopePlan, rng: random.Random) -> list[Question]:
    """The scope's 24 questions, in checkpoint order."""
    b = _Builder(plan, rng)
    story = plan.storyline
    domain = plan.domain
    signal = story.signal
    k1, k2, k3, k4, k5, _ = (arc_position(stage, signal) for stage in STAGES)
    baseline = list(range(1, arc_position(5, signal) + 1))
    P, S, V, X = Role.PRIMARY, Role.SECONDARY, Role.VOLUME, Role.SUSPECT
    onset, hs, he, a1, root, corr = (
        story.onset,
        story.herring_start,
        story.herring_end,
        story.first_alarm,
        story.root_cause,
        story.corroboration,
    )
    post = he + 1
    themes = domain.themes
    drafts: list[_Draft] = []

    def add(stage: int, qtype: str, prompt: str, answer: str, refs: Sequence[int], facts: Sequence[KeyFact]) -> None:
        unique = {fact.fact: fact for fact in facts}
        drafts.append(_Draft(stage, qtype, prompt, answer, tuple(sorted(set(refs))), tuple(unique.values())))

    # Stage 1 (baseline): nothing to see yet.
    early = [k for k in baseline if k <= k1]
    e1, e2 = b.distinct(P, early, 2)
    add(
        1,
        "evidence_sufficiency",
        f"Do you have enough data yet to identify any concerning trends in {b.area}?",
        f"Not yet. The first reports show {b.primary} holding near its baseline ({b.said(P, e1)}, {b.said(P, e2)}); "
        "a few days of steady readings cannot establish a trend.",
        [e1, e2],
        [b.fact(P, e1), b.fact(P, e2)],
    )
    l1, l2 = b.distinct(P, early, 2)
    add(
        1,
        "longitudinal",
        f"Based on the first few daily summaries, are any patterns emerging in {b.area}?",
        f"No concerning pattern yet. {_sentence(b.primary)} stays near its baseline ({b.said(P, l1)}, {b.said(P, l2)}) "
        f"and {b.volume} is steady ({b.said(V, l1)}).",
        early,
        [b.fact(P, l1), b.fact(P, l2), b.fact(V, l1)],
    )
    n1 = rng.choice(early)
    series, reading = _null_reading(plan, n1, rng)
    add(
        1,
        "null_hypothesis",
        f"What {series.label} did {series.entity} report on {b.date(n1)}?",
        f"The {b.date(n1)} report recorded {series.entity} {reading.text}.",
        [n1],
        [value_fact(series, reading.formatted)],
    )

    # Stage 2 (early signal): the primary series has started to climb.
    (base2,) = b.distinct(P, baseline, 1, avoid=[onset, k2])
    long2_answer = (
        f"Yes. {_sentence(b.primary)} has been climbing: it read {b.said(P, base2)}, first crossed its {b.watch} watch line "
        f"on {b.date(onset)} ({b.reading(P, onset).text}) and reads {b.said(P, k2)}."
    )
    long2_facts = [b.fact(P, base2), b.fact(P, onset), b.fact(P, k2)]
    long2_refs = [base2, onset, (onset + k2) // 2, k2]
    add(2, "longitudinal", f"Are there any concerning patterns in {b.area} so far?", long2_answer, long2_refs, long2_facts)
    add(2, "paraphrase", b.fill(domain.phrases.dependency_question), long2_answer, long2_refs, long2_facts)
    add(
        2,
        "temporal",
        f"When did {b.primary} first cross its watch line, and what did it read in the report before?",
        f"It first crossed the {b.watch} watch line on {b.date(onset)} ({b.reading(P, onset).text}); "
        f"the report before, on {b.date(onset - 1)}, showed {b.reading(P, onset - 1).text}.",
        [onset - 1, onset],
        [date_fact(plan.day(onset).day), b.fact(P, onset), b.fact(P, onset - 1)],
    )

    # Stage 3 (red herring over): the rise predates the herring and outlives it.
    herring_end = b.event(domain.herring_end)
    add(
        3,
        "negative",
        f"Did {b.herring} cause the rise in {b.primary}?",
        f"No. {_sentence(b.primary)} was already over its {b.watch} watch line on {b.date(onset)} ({b.reading(P, onset).text}), "
        f"before {b.herring} on {b.date(hs)}, and it kept rising after {b.event_text(domain.herring_end)} on {b.date(he)}, "
        f"reaching {b.said(P, post)}.",
        [onset, he, post],
        [b.fact(P, onset), herring_end, b.fact(P, post)],
    )
    (base3,) = b.distinct(P, baseline, 1, avoid=[onset, k3])
    add(
        3,
        "evidence_sufficiency",
        f"Is there sufficient evidence yet to investigate a specific cause for the changes in {b.area}?",
        f"Yes. It moved from {b.said(P, base3)} to {b.reading(P, onset).text} when it first crossed its {b.watch} watch line on "
        f"{b.date(onset)}, and it reads {b.said(P, k3)}: a sustained rise over {k3 - onset + 1} daily reports.",
        [base3, onset, k3],
        [b.fact(P, base3), b.fact(P, onset), b.fact(P, k3)],
    )
    add(
        3,
        "distractor_resistance",
        b.fill(themes[0].question, primary=b.primary, system=b.system, consequence=f"rise in {b.primary}"),
        f"No. {_separate(themes[0].topic, b.system)} The change is in {b.primary} itself: {b.said(P, onset)}, rising to {b.said(P, k3)}.",
        [onset, k3],
        [b.fact(P, onset), b.fact(P, k3)],
    )
    add(
        3,
        "temporal",
        f"Did the rise in {b.primary} begin before or after {b.herring}?",
        f"Before. {_sentence(b.primary)} first crossed its {b.watch} watch line on {b.date(onset)} "
        f"({b.reading(P, onset).text}); {b.event_text(domain.herring_start)} only on {b.date(hs)}.",
        [onset, hs],
        [date_fact(plan.day(onset).day), b.fact(P, onset), b.event(domain.herring_start)],
    )

    # Stage 4 (escalation): the consequence is over its alarm line.
    alarm = b.alarm_fact()
    alarm_days = sum(1 for k in range(a1, k4 + 1) if b.reading(S, k).value > story.alarm)
    add(
        4,
        "severity_assessment",
        f"How severe are the {b.consequence} now?",
        f"Severe and getting worse. {_sentence(b.secondary_name)} first went over its {b.alarm} alarm line on {b.date(a1)} "
        f"({b.reading(S, a1).text}) and reads {b.said(S, k4)}; it was over the line in {alarm_days} of the "
        f"{k4 - a1 + 1} reports since, with {b.alarm_phrase()} noted on those days.",
        [a1, k4],
        [alarm, b.fact(S, a1), b.fact(S, k4)],
    )
    add(
        4,
        "longitudinal",
        f"What is the current impact of the {b.consequence}, and what appears to be driving it?",
        f"{_sentence(b.secondary_name)} is over its {b.alarm} alarm line ({b.said(S, k4)}), with {b.alarm_phrase()} "
        f"since {b.date(a1)}. It follows the earlier rise in {b.primary}, which crossed its watch line on {b.date(onset)} "
        f"({b.reading(P, onset).text}) and now reads {b.reading(P, k4).text}.",
        [onset, a1, (a1 + k4) // 2, k4],
        [b.fact(S, k4), alarm, b.fact(P, onset)],
    )
    vb, vk = _two_distinct(b, V, baseline, k4)
    add(
        4,
        "negative",
        f"Is a surge in {b.volume} behind the {b.consequence}?",
        f"No. {_sentence(b.volume)} is flat ({b.said(V, vb)}, {b.said(V, vk)}) while {b.secondary_name} went from "
        f"{b.reading(S, vb).text} to {b.reading(S, vk).text}.",
        [vb, vk],
        [b.fact(V, vb), b.fact(V, vk)],
    )
    add(
        4,
        "counterfactual",
        f"If {b.herring} were responsible for the {b.consequence}, what would you expect to see, and does the data support it?",
        f"The trouble would start with it on {b.date(hs)} and ease after {b.event_text(domain.herring_end)} on {b.date(he)}. "
        f"The data says otherwise: {b.primary} kept rising after that ({b.said(P, post)}) and {b.alarm_phrase()} "
        f"only began on {b.date(a1)}.",
        [he, post, a1],
        [herring_end, b.fact(P, post), alarm],
    )
    theme = themes[1 % len(themes)]
    add(
        4,
        "distractor_resistance",
        b.fill(theme.question, primary=b.primary, system=b.system, consequence=b.consequence),
        f"No. {_separate(theme.topic, b.system)} The {b.consequence} "
        f"track {b.secondary_name}: over its {b.alarm} alarm line since {b.date(a1)} ({b.reading(S, a1).text}), now {b.said(S, k4)}.",
        [a1, k4],
        [b.fact(S, a1), b.fact(S, k4)],
    )
    n2 = rng.choice(range(k3 + 1, k4 + 1))
    series, reading = _null_reading(plan, n2, rng)
    add(
        4,
        "null_hypothesis",
        f"What {series.label} did {series.entity} report on {b.date(n2)}?",
        f"The {b.date(n2)} report recorded {series.entity} {reading.text}.",
        [n2],
        [value_fact(series, reading.formatted)],
    )

    # Stage 5 (root cause found).
    root_fact = b.event(domain.root_cause)
    root_text = b.event_text(domain.root_cause)
    long4_answer = (
        f"{_sentence(b.cause)}. The evidence builds up over the reports: {b.primary} first crossed its {b.watch} watch line "
        f"on {b.date(onset)} ({b.reading(P, onset).text}); {b.herring} is ruled out because the rise continued after "
        f"{b.event_text(domain.herring_end)} on {b.date(he)}; {b.alarm_phrase()} followed from {b.date(a1)}; and on "
        f"{b.date(root)}: {root_text}."
    )
    long4_refs = [onset, he, a1, root]
    long4_facts = [root_fact, alarm, b.fact(P, onset), herring_end]
    add(5, "longitudinal", f"What is the root cause of the {b.consequence}?", long4_answer, long4_refs, long4_facts)
    add(5, "paraphrase", b.fill(domain.phrases.why_question), long4_answer, long4_refs, long4_facts)
    add(
        5,
        "paraphrase",
        f"What sequence of events led to the {b.consequence}?",
        f"First {b.primary} rose past its {b.watch} watch line on {b.date(onset)} ({b.reading(P, onset).text}); "
        f"{b.event_text(domain.herring_start)} on {b.date(hs)} but did not explain it; {b.alarm_phrase()} began on "
        f"{b.date(a1)}; and on {b.date(root)}: {root_text}.",
        [onset, hs, a1, root],
        [b.fact(P, onset), b.event(domain.herring_start), alarm, root_fact],
    )
    (base5,) = b.distinct(P, baseline, 1, avoid=[onset, a1, k5])
    add(
        5,
        "temporal",
        f"How has {b.primary} progressed from its baseline to now?",
        f"It read {b.said(P, base5)}, crossed its {b.watch} watch line at {b.reading(P, onset).text} on {b.date(onset)}, "
        f"was at {b.reading(P, a1).text} when {b.secondary_name} first crossed its alarm line on {b.date(a1)}, "
        f"and reads {b.said(P, k5)}.",
        [base5, onset, a1, k5],
        [b.fact(P, base5), b.fact(P, onset), b.fact(P, a1), b.fact(P, k5)],
    )
    vb, vk = _two_distinct(b, V, baseline, k5)
    add(
        5,
        "counterfactual",
        f"If the {b.consequence} were caused by a surge in {b.volume}, what pattern would you expect, and does the record show it?",
        f"A surge would show {b.volume} climbing with the problem. It does not: {b.said(V, vb)}, {b.said(V, vk)}. "
        f"The cause is elsewhere: {b.cause}.",
        [vb, vk, root],
        [b.fact(V, vb), b.fact(V, vk), root_fact],
    )
    xb, xk = _two_distinct(b, X, baseline, k5)
    add(
        5,
        "negative",
        f"Is {b.suspect} contributing to the {b.consequence}?",
        f"No. {_sentence(b.suspect)} holds steady ({b.said(X, xb)}, {b.said(X, xk)}) through the escalation; "
        f"the cause is elsewhere: {b.cause}.",
        [xb, xk, root],
        [b.fact(X, xb), b.fact(X, xk), root_fact],
    )
    theme = themes[2 % len(themes)]
    add(
        5,
        "distractor_resistance",
        b.fill(theme.question, primary=b.primary, system=b.system, consequence=b.consequence),
        f"No. {_separate(theme.topic, b.system)} "
        f"The {b.consequence} come from elsewhere: {b.alarm_phrase()} since {b.date(a1)}, and on {b.date(root)}: {root_text}.",
        [a1, root],
        [alarm, root_fact],
    )

    # Stage 6 (end of stream): what to do.
    add(
        6,
        "action_recommendation",
        f"What should the team do to prevent the {b.consequence} from recurring?",
        f"{_sentence(b.fill(domain.phrases.action))} The evidence: {root_text} ({b.date(root)}); "
        f"{b.event_text(domain.corroboration)} ({b.date(corr)}); {b.alarm_phrase()} since {b.date(a1)}.",
        [root, corr, a1],
        [root_fact, b.event(domain.corroboration), alarm],
    )
    return _questions(plan, drafts, rng, (k1, k2, k3, k4, k5))


def _two_distinct(b: _Builder, role: Role, baseline: Sequence[int], latest: int) -> tuple[int, int]:
    """A baseline day and ``latest`` (or the day before), with different ``role`` readings when there are any."""
    for k in (latest, latest - 1, latest - 2):
        try:
            (first,) = b.distinct(role, baseline, 1, avoid=[k])
        except ValueError:
            continue
        return first, k
    # A flat series may print the same value every day: then both days quote it (one key fact).
    return b.rng.choice(list(baseline)), latest


def _null_reading(plan: ScopePlan, k: int, rng: random.Random) -> tuple[SeriesSpec, Reading]:
    """A background reading with a unit (a bare number would match too loosely) on day ``k``."""
    readings: Mapping[SeriesSpec, Reading] = {r.series: r for r in plan.episodes[plan.day(k).position - 1].readings}
    candidates = [s for s in plan.domain.series if s.unit and s.role in (None, Role.SUSPECT)]
    series = rng.choice(candidates)
    return series, readings[series]


def _questions(plan: ScopePlan, drafts: Sequence[_Draft], rng: random.Random, stage_days: Sequence[int]) -> list[Question]:
    """Checkpoints per stage (somewhere before the next signal report), ids, refs as episode ids."""
    total = len(plan.episodes)
    checkpoints: dict[int, int] = {}
    for stage, k in enumerate(stage_days, start=1):
        start = plan.day(k).position
        checkpoints[stage] = start + rng.randrange(plan.next_signal_position(k) - start)
    last = plan.day(plan.storyline.signal).position
    checkpoints[len(stage_days) + 1] = last + rng.randrange(total - last + 1)
    prefix = f"{plan.domain.code}s{plan.seed:02d}"
    questions = []
    for number, draft in enumerate(drafts, start=1):
        questions.append(
            Question(
                question_id=f"{prefix}_q{number:02d}_{draft.question_type}",
                scope_id=plan.scope_id,
                checkpoint_after=checkpoints[draft.stage],
                question_type=draft.question_type,
                prompt=draft.prompt,
                ground_truth=GroundTruth(
                    canonical_answer=draft.answer,
                    required_evidence_refs=tuple(episode_id(plan.scope_id, plan.day(k).position, total) for k in draft.refs),
                    key_facts=draft.facts,
                ),
            )
        )
    return questions
