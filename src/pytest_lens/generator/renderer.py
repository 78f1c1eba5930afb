"""The blind renderer: one episode's plan in, one structured daily report out.

It sees a single :class:`~pytest_lens.generator.planner.EpisodePlan` and its own random
stream — never the storyline, the other days or whether the episode is signal — so it
cannot editorialise, and signal and distractor reports share one format: a dated header,
``Readings`` (one line per entity), ``Changes``, ``Field Notes`` and ``Flags``.
"""

from __future__ import annotations

import random
from collections import defaultdict

from pytest_lens.generator.planner import EpisodePlan, Filler
from pytest_lens.text import content_terms

__all__ = ["FORMAT_TERMS", "REPORT_TITLE", "UNIT_TERMS", "render_episode"]

REPORT_TITLE = "Daily Operations Summary"
_SECTIONS = ("Readings", "Changes", "Field Notes", "Flags")
_NO_CHANGES = ("none recorded", "no changes recorded")
_NO_FLAGS = ("none", "nothing over a watch line")
#: Words of the flag templates shared by every report.
_FLAG_WORDS = "WATCH ALARM over the watch line alarm line"

#: Units are format, not topic: a signal and a distractor may both report milliseconds.
UNIT_TERMS = frozenset(
    {
        "ms",
        "kg",
        "km",
        "mg",
        "ug",
        "mm",
        "cm",
        "ml",
        "kb",
        "mb",
        "gb",
        "tb",
        "mw",
        "kw",
        "kwh",
        "mwh",
        "ppm",
        "ppb",
        "min",
        "hours",
        "days",
        "litres",
    }
)

#: Words every report may contain whatever its topic: the skeleton of the format.
FORMAT_TERMS = frozenset(content_terms(" ".join((REPORT_TITLE, *_SECTIONS, *_NO_CHANGES, *_NO_FLAGS, _FLAG_WORDS)))) | UNIT_TERMS


def render_episode(plan: EpisodePlan, rng: random.Random) -> str:
    """The report text of one episode; ``rng`` only chooses routine filler and ordering."""
    lines = [f"## {plan.timestamp.date().isoformat()} {REPORT_TITLE}", "", "### Readings"]
    by_entity: dict[str, list[str]] = defaultdict(list)
    for reading in plan.readings:
        by_entity[reading.series.entity].append(reading.text)
    lines.extend(f"- {entity}: {' | '.join(texts)}" for entity, texts in by_entity.items())

    changes = list(plan.changes)
    if plan.filler.changes and rng.random() < 0.5:
        changes.append(_routine(rng.choice(plan.filler.changes), plan.filler, rng))
    rng.shuffle(changes)
    lines += ["", "### Changes", *(f"- {change}" for change in changes or [rng.choice(_NO_CHANGES)])]

    notes = list(plan.notes)
    wanted = max(1, rng.randint(2, 3) - len(notes))
    for template in rng.sample(plan.filler.notes, min(wanted, len(plan.filler.notes))):
        notes.append(_routine(template, plan.filler, rng))
    rng.shuffle(notes)
    lines += ["", "### Field Notes", *(f"- {note}" for note in notes)]

    lines += ["", "### Flags", *(f"- {flag}" for flag in plan.flags or [rng.choice(_NO_FLAGS)])]
    return "\n".join(lines)


def _routine(template: str, filler: Filler, rng: random.Random) -> str:
    return template.format(**filler.variables, n=rng.randint(2, 9), nn=rng.randint(10, 99))
