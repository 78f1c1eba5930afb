"""The optional LLM stage: richer text from any OpenAI-compatible endpoint, behind the same checks.

Two roles, as in the LENS paper's two-stage pipeline:

- the **planner** sees the whole domain (its storyline included) and writes extra routine
  field notes for the signal reports and for each distractor theme, so reports vary more.
  A note is kept only if it carries no number and none of the words that tell the
  storyline, and (signal notes) none of the distractor themes' words or (theme notes)
  none of the signal's;
- the **blind renderer** sees one report's plan at a time (date, readings, events, flags;
  never the storyline, never whether the report is signal) and writes the report. Its text
  is kept only if it has the exact header and sections, quotes every planned line
  verbatim, invents no number and keeps the topics apart (a signal report adds no word of
  the distractor themes, a distractor uses no storyline term); otherwise that one report
  falls back to the deterministic renderer, and the fallback is counted.

Values, events, questions and key facts still come from the deterministic planner, and the
generated scope passes the same guarantee checks as without the LLM. Requests go through
:class:`~pytest_lens.llm.client.ChatClient` and its request cache: a recorded run replays
byte for byte.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_lens.generator.planner import EpisodePlan, ScopePlan
from pytest_lens.generator.renderer import REPORT_TITLE
from pytest_lens.generator.spec import DomainSpec, EventSpec, ThemeSpec
from pytest_lens.generator.vocabulary import topic_terms
from pytest_lens.judging.verdicts import UnusableReply, json_object, reply_body

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["PLANNER_SYSTEM_PROMPT", "RENDERER_SYSTEM_PROMPT", "LLMStageReport", "LLMWriter", "report_problem"]

PLANNER_SYSTEM_PROMPT = (
    "You help build a synthetic monitoring dataset. Given a domain and its distractor themes, write short routine "
    "field notes in the voice of an operations log: what a shift would jot down on an ordinary day. Never mention "
    "the storyline events, never use numbers, one sentence per note, at most 15 words. Reply with JSON only, in the "
    "shape given as reply_format."
)

RENDERER_SYSTEM_PROMPT = (
    "You format one daily operations report from structured data. You see only this report's data. Output Markdown "
    "only, exactly in this shape: the header line, then the sections '### Readings', '### Changes', '### Field Notes', "
    "'### Flags' in that order, each entry a '- ' bullet. Copy every reading line, change, note and flag exactly as "
    "given. You may add one or two short routine field notes in your own words (routine_note_ideas may help); never "
    "add numbers, never interpret trends, never speculate about causes. Write 'none recorded' under an empty Changes "
    "section and 'none' under empty Flags."
)

NOTES_PER_LIST = 4
_MAX_NOTE_CHARS = 160
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SECTIONS = ("### Readings", "### Changes", "### Field Notes", "### Flags")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass
class LLMStageReport:
    """What the LLM stage contributed to one scope, and what it was refused (by reason)."""

    model: str
    planner_notes_kept: int = 0
    planner_notes_rejected: Counter[str] = field(default_factory=Counter)
    rendered: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        """Human-readable summary lines (``lens generate`` prints them)."""
        fell_back = sum(self.fallbacks.values())
        rejected = sum(self.planner_notes_rejected.values())
        return [
            f"LLM renderer ({self.model}): {self.rendered} of {self.rendered + fell_back} reports written by the model, "
            f"{fell_back} fell back to the deterministic renderer{_reasons(self.fallbacks)}",
            f"LLM planner ({self.model}): {self.planner_notes_kept} routine notes kept, {rejected} rejected"
            f"{_reasons(self.planner_notes_rejected)}",
        ]


def _reasons(counter: Counter[str]) -> str:
    return f" ({', '.join(f'{reason}: {count}' for reason, count in sorted(counter.items()))})" if counter else ""


class LLMWriter:
    """The planner and blind-renderer roles for one scope, through one chat client."""

    def __init__(self, client: ChatClient) -> None:
        """Bind to ``client``; :class:`~pytest_lens.llm.errors.LLMCacheError` when its request cache is unusable."""
        client.cache.check()
        self.client = client
        self.report = LLMStageReport(model=client.model)
        #: The storyline terms distractors are checked against (set by :meth:`rewrite`).
        self.storyline: set[str] = set()

    # -- planner -------------------------------------------------------------------------------
    def enrich(self, domain: DomainSpec, variables: Mapping[str, str]) -> DomainSpec:
        """``domain`` with the planner's accepted routine notes added to its and its themes' pools."""
        from pytest_lens.llm.errors import LLMCacheMiss, LLMError

        events = [_fill(event.text, variables) for event in _events(domain)]
        request = {
            "domain": domain.description,
            "signal_entities": sorted({s.entity for s in domain.series}),
            "storyline_events_never_to_mention": events,
            "themes": {theme.name: sorted({s.entity for s in theme.series}) for theme in domain.themes},
            "notes_per_list": NOTES_PER_LIST,
            "reply_format": {"signal_notes": ["..."], "themes": {theme.name: ["..."] for theme in domain.themes}},
        }
        messages = [
            {"role": "system", "content": PLANNER_SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(request, sort_keys=True)},
        ]
        try:
            reply = self.client.complete(messages, purpose="generator planner").content
        except LLMCacheMiss:
            raise  # replaying must reproduce the recorded run, not quietly fall back
        except LLMError:
            self.report.planner_notes_rejected["request failed"] += 1
            return domain
        payload = _json_object(reply)
        if payload is None:
            self.report.planner_notes_rejected["reply is not a JSON object"] += 1
            return domain
        event_words = _words(events)
        setting_words = _words(_setting_texts(domain, variables))
        theme_words = _words(text for theme in domain.themes for text in _theme_texts(theme))
        signal_notes = self._keep(payload.get("signal_notes"), forbidden=(event_words - setting_words) | theme_words)
        replies = payload.get("themes")
        by_theme = replies if isinstance(replies, Mapping) else {}
        themes = tuple(
            replace(theme, routine_notes=theme.routine_notes + self._keep(by_theme.get(theme.name), forbidden=event_words | setting_words))
            for theme in domain.themes
        )
        return replace(domain, routine_notes=domain.routine_notes + signal_notes, themes=themes)

    def _keep(self, notes: Any, *, forbidden: AbstractSet[str]) -> tuple[str, ...]:
        kept: list[str] = []
        for note in notes[: NOTES_PER_LIST * 2] if isinstance(notes, list) else []:
            reason = _note_problem(note, forbidden)
            if reason:
                self.report.planner_notes_rejected[reason] += 1
            else:
                kept.append(str(note).strip())
        unique = tuple(dict.fromkeys(kept))
        self.report.planner_notes_kept += len(unique)
        return unique

    # -- blind renderer --------------------------------------------------------------------------
    def rewrite(self, plan: ScopePlan, texts: Sequence[str], rng_for: Callable[[int], random.Random]) -> list[str]:
        """Every report rewritten by the model where it passes the checks; ``texts`` (deterministic) elsewhere.

        The storyline terms are the deterministic signal reports' topic words (:attr:`storyline`);
        a distractor may not use one. A signal report may not add a word that only the storyline's
        events use (no hint of another day's events) nor a word of the distractor themes. Plain
        prose the model adds on both sides tells no storyline and is allowed.
        """
        signal = [label.kind == "signal" for label in plan.labels]
        self.storyline = _words(text for text, is_signal in zip(texts, signal, strict=True) if is_signal)
        theme_words = _words(text for text, is_signal in zip(texts, signal, strict=True) if not is_signal)
        theme_words |= _words(note for theme in plan.domain.themes for note in _theme_texts(theme))
        # Words only the events use (routine notes share some, e.g. an entity or a region).
        event_words = _words(_fill(event.text, plan.variables) for event in _events(plan.domain))
        event_words -= _words(_setting_texts(plan.domain, plan.variables))
        out = []
        for episode, text, is_signal in zip(plan.episodes, texts, signal, strict=True):
            rng = rng_for(episode.position)
            if is_signal:
                out.append(self._render(episode, text, rng, not_to_add=event_words | theme_words, forbidden=frozenset()))
            else:
                out.append(self._render(episode, text, rng, not_to_add=frozenset(), forbidden=self.storyline))
        return out

    def _render(
        self, plan: EpisodePlan, fallback: str, rng: random.Random, *, not_to_add: AbstractSet[str], forbidden: AbstractSet[str]
    ) -> str:
        from pytest_lens.llm.errors import LLMCacheMiss, LLMError

        messages = [
            {"role": "system", "content": RENDERER_SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(_plan_payload(plan, rng), sort_keys=True)},
        ]
        try:
            text = reply_body(self.client.complete(messages, purpose="generator renderer").content)
        except LLMCacheMiss:
            raise
        except LLMError:
            self.report.fallbacks["request failed"] += 1
            return fallback
        problem = report_problem(text, plan, forbidden=forbidden)
        if problem is None and (topic_terms(text) - topic_terms(fallback)) & not_to_add:
            problem = "a storyline or distractor word added to a signal report"
        if problem:
            self.report.fallbacks[problem] += 1
            return fallback
        self.report.rendered += 1
        return text


def report_problem(text: str, plan: EpisodePlan, *, forbidden: AbstractSet[str] = frozenset()) -> str | None:
    """Why a model-written report cannot stand in for ``plan`` (``None`` when it can).

    ``forbidden`` holds words the report must not use (a distractor: the storyline terms).
    """
    lines = text.splitlines()
    header = _visible_lines(plan)[0]
    if not lines or lines[0].strip() != header:
        return "wrong header"
    if [line.strip() for line in lines if line.startswith("#")][1:] != list(_SECTIONS):
        return "wrong sections"
    if any(item not in text for item in _visible_lines(plan)[1:]):
        return "a planned line is missing"
    if set(_NUMBER.findall(text)) - set(_NUMBER.findall("\n".join(_visible_lines(plan)))):
        return "invented a number"
    if forbidden and topic_terms(text) & forbidden:
        return "a storyline term in a distractor"
    if len(text) > 3 * sum(len(line) for line in _visible_lines(plan)) + 1500:
        return "far too long"
    return None


def _visible_lines(plan: EpisodePlan) -> list[str]:
    """The header, reading lines and event lines the renderer must reproduce verbatim."""
    readings: dict[str, list[str]] = {}
    for reading in plan.readings:
        readings.setdefault(reading.series.entity, []).append(reading.text)
    return [
        f"## {plan.timestamp.date().isoformat()} {REPORT_TITLE}",
        *(f"{entity}: {' | '.join(texts)}" for entity, texts in readings.items()),
        *plan.changes,
        *plan.notes,
        *plan.flags,
    ]


def _plan_payload(plan: EpisodePlan, rng: random.Random) -> dict[str, Any]:
    """What the blind renderer sees: this report only."""
    header, *_ = _visible_lines(plan)
    readings = _visible_lines(plan)[1 : 1 + len({reading.series.entity for reading in plan.readings})]
    pool = list(plan.filler.notes)
    # Placeholders become words: the model gets no number the plan does not hold.
    ideas = [_fill(note, plan.filler.variables, n="several", nn="many") for note in rng.sample(pool, min(3, len(pool)))]
    return {
        "header": header,
        "readings": readings,
        "changes": list(plan.changes),
        "notes": list(plan.notes),
        "flags": list(plan.flags),
        "routine_note_ideas": ideas,
    }


def _note_problem(note: Any, forbidden: AbstractSet[str]) -> str | None:
    if not isinstance(note, str) or not note.strip():
        return "not a sentence"
    if len(note) > _MAX_NOTE_CHARS or "\n" in note.strip():
        return "too long"
    if _NUMBER.search(note) or "{" in note or "}" in note:
        return "a number or placeholder"
    if topic_terms(note) & forbidden:
        return "a storyline or other-topic word"
    return None


def _events(domain: DomainSpec) -> list[EventSpec]:
    return [domain.herring_start, domain.herring_end, domain.root_cause, domain.corroboration, *domain.escalation]


def _setting_texts(domain: DomainSpec, variables: Mapping[str, str]) -> list[str]:
    """What the signal reports say outside their events: entities, labels, routine notes and changes."""
    texts = [f"{series.entity} {series.label}" for series in domain.series]
    return texts + [_fill(note, variables) for note in (*domain.routine_notes, *domain.routine_changes)]


def _theme_texts(theme: ThemeSpec) -> list[str]:
    texts = [f"{series.entity} {series.label}" for series in theme.series]
    texts += [_fill(note, {}) for note in (*theme.routine_notes, *theme.routine_changes, *theme.events)]
    return texts + [value for values in theme.variables.values() for value in values]


def _words(texts: Iterable[str]) -> set[str]:
    words: set[str] = set()
    for text in texts:
        words |= topic_terms(text)
    return words


def _fill(template: str, variables: Mapping[str, str], **extra: str) -> str:
    values = {**variables, **extra}
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), ""), template)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        return dict(json_object(text))
    except UnusableReply:
        return None
