"""The comparability card: what a run's numbers depend on, in one small record that every artifact, summary and report shows.

Published memory-benchmark figures often cannot be compared: judge model, answering model, question categories,
budget and metric all differ between them. The card names each of those for one run, and :func:`differences`
says where two cards differ. ``lens compare`` and ``--lens-baseline`` refuse two runs that differ in a field of
:data:`REFUSING` (it changes what a question's score measures) unless the user accepts that field by name
(``--accept-unlike`` / ``--lens-accept-unlike``); the other fields are shown, and a difference in them is printed
as a warning with the reason it does not bias a paired comparison.

Every field may be unknown (``None`` or empty) in a card derived from an artifact written before cards existed;
an unknown value is never a reason to refuse.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

__all__ = [
    "CARD_FIELDS",
    "REFUSING",
    "CardDifference",
    "CardSelection",
    "ComparabilityCard",
    "SelectedQuestion",
    "differences",
    "endpoint_kind",
    "parse_accepted",
    "refusing",
    "selection_of",
]

#: The card's fields in the order they are shown.
CARD_FIELDS = ("data", "selection", "budget", "agent", "judge", "scoring", "headline", "test", "categories", "repetitions", "seed")

#: Fields whose difference changes what a question's score measures: comparing such runs is refused unless accepted.
REFUSING = ("data", "budget", "agent", "judge", "scoring")

#: Why a difference in each other field does not bias a paired comparison (printed beside the difference).
NOT_REFUSED = {
    "selection": "questions are paired by id, only those both runs have are compared (the gate fails a partial comparison unless allowed)",
    "categories": "questions are paired by id, only those both runs have are compared",
    "headline": "both runs are rescored with this run's headline from their per-question metrics; a question without them is not compared",
    "test": "the comparison uses this run's test on both",
    "repetitions": "a repeated question's score is the mean of its answers: the same measurement, less noise",
    "seed": "the seed draws another sample of the same measurement (positions, sampling); the paired test counts it as noise",
}


class SelectedQuestion(Protocol):
    """What the card reads of a selected question (a result, or a case's parts)."""

    @property
    def scope_id(self) -> str: ...  # noqa: D102

    @property
    def question_id(self) -> str: ...  # noqa: D102

    @property
    def question_type(self) -> str: ...  # noqa: D102


class _Card(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CardSelection(_Card):
    """Which questions a run asked: how many, in how many scopes, and a digest of their ids."""

    questions: int
    scopes: int
    #: SHA-256 (first 16 hex digits) of the sorted ``scope_id/question_id`` lines.
    digest: str

    def describe(self) -> str:
        """``144 questions in 6 scopes (ids 1a2b3c4d5e6f7a8b)``."""
        return f"{self.questions} questions in {self.scopes} scope{'s' if self.scopes != 1 else ''} (ids {self.digest})"


class ComparabilityCard(_Card):
    """What a run's scores depend on (see the module docstring; :data:`REFUSING` names the fields that refuse)."""

    #: Dataset file (or scope directory) name -> SHA-256 of its content.
    data: dict[str, str] = {}
    selection: CardSelection | None = None
    #: Each budget: its name and limits.
    budget: list[str] = []
    #: ``offline`` or ``llm MODEL (ENDPOINT KIND)``.
    agent: str | None = None
    #: ``none``, ``offline`` or ``llm MODEL (ENDPOINT KIND)``; sibling suites' judges after a ``;``.
    judge: str | None = None
    #: ``--lens-scoring``: ``paper`` or ``v2``.
    scoring: str | None = None
    #: The headline metric's name (``retrieval_score``, ``composite``).
    headline: str | None = None
    #: The paired test the run's comparisons use, as its statistics name it.
    test: str | None = None
    #: The question types asked.
    categories: list[str] = []
    repetitions: int | None = None
    seed: int | None = None

    def value(self, name: str) -> str | None:
        """Field ``name`` as one line of text (``None`` when unknown)."""
        found = getattr(self, name)
        if found is None or found == [] or found == {}:
            return None
        if name == "data":
            return f"{len(self.data)} file{'s' if len(self.data) != 1 else ''}, sha256 {data_digest(self.data)}"
        if isinstance(found, CardSelection):
            return found.describe()
        if isinstance(found, list):
            return ", ".join(found) if name != "categories" else f"{len(found)} ({', '.join(found)})"
        return str(found)

    def items(self) -> list[str]:
        """``name: value`` per known field, refusing fields marked ``*``."""
        return [f"{name}{'*' if name in REFUSING else ''}: {shown}" for name in CARD_FIELDS if (shown := self.value(name)) is not None]

    def lines(self, width: int = 120) -> list[str]:
        """The card for a terminal: a heading, then its items packed into lines of about ``width`` characters."""
        out = ["comparability card (lens compare and --lens-baseline refuse a run that differs in a * field):"]
        line = ""
        for item in self.items():
            if line and len(line) + 3 + len(item) > width:
                out.append(f"  {line}")
                line = ""
            line = f"{line} · {item}" if line else item
        return [*out, f"  {line}"] if line else out


def data_digest(data: Mapping[str, str]) -> str:
    """One digest for a run's data: SHA-256 (first 16 hex digits) of the sorted ``name sha256`` lines."""
    text = "\n".join(f"{name} {sha}" for name, sha in sorted(data.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def selection_of(questions: Iterable[SelectedQuestion]) -> tuple[CardSelection, list[str]]:
    """The selection and the sorted question types of ``questions`` (each question once, whoever answered it)."""
    ids = {(q.scope_id, q.question_id) for q in questions}
    types = sorted({q.question_type for q in questions})
    text = "\n".join(f"{scope}/{question}" for scope, question in sorted(ids))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return CardSelection(questions=len(ids), scopes=len({scope for scope, _ in ids}), digest=digest), types


def endpoint_kind(url: str | None) -> str:
    """``local`` for a loopback address (its port is a detail of one run), else the host: what kind of server answered."""
    if not url:
        return "api.openai.com"
    try:
        host = urlsplit(url.split()[0]).hostname or "?"
    except ValueError:
        return "?"
    return "local" if host == "localhost" or host.startswith("127.") or host == "::1" else host


@dataclass(frozen=True)
class CardDifference:
    """One field in which two cards differ."""

    field: str
    ours: str | None
    theirs: str | None

    @property
    def refuses(self) -> bool:
        """Whether this difference makes the runs incomparable (both values known, in a :data:`REFUSING` field)."""
        return self.field in REFUSING and self.ours is not None and self.theirs is not None

    def line(self, other: str = "baseline") -> str:
        """``judge differs: this run none, baseline llm gpt-4o (api.openai.com)`` and, when not refusing, why it may stand."""
        head = f"{self.field} differs: this run {self.ours or 'not recorded'}, {other} {self.theirs or 'not recorded'}"
        if self.ours is None or self.theirs is None:
            return f"{head} (not recorded by a run written before comparability cards; not checked)"
        why = NOT_REFUSED.get(self.field)
        return f"{head} ({why})" if why else head


def differences(ours: ComparabilityCard, theirs: ComparabilityCard) -> list[CardDifference]:
    """Every field in which ``ours`` and ``theirs`` differ, in card order."""
    found = []
    for name in CARD_FIELDS:
        if getattr(ours, name) != getattr(theirs, name):
            mine, other = ours.value(name), theirs.value(name)
            if name == "data" and mine is not None and other is not None:
                mine, other = _data_difference(ours.data, theirs.data)
            found.append(CardDifference(name, mine, other))
    return found


def _data_difference(ours: Mapping[str, str], theirs: Mapping[str, str]) -> tuple[str, str]:
    """The differing files only, each with its digest's first 12 hex digits."""
    names = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))

    def shown(data: Mapping[str, str]) -> str:
        return ", ".join(f"{name} {data[name][:12]}" if name in data else f"no {name}" for name in names)

    return shown(ours), shown(theirs)


def refusing(ours: ComparabilityCard, theirs: ComparabilityCard, accepted: Iterable[str] = ()) -> list[CardDifference]:
    """The differences that make the two runs incomparable, less those ``accepted`` by field name."""
    allowed = set(accepted)
    return [difference for difference in differences(ours, theirs) if difference.refuses and difference.field not in allowed]


def parse_accepted(text: str) -> tuple[str, ...]:
    """``judge,budget`` -> ``("judge", "budget")``; :class:`ValueError` naming a name that is no refusing field."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in REFUSING]
    if unknown or not names:
        raise ValueError(
            f"{', '.join(map(repr, unknown)) or 'nothing'}: name the comparability-card fields to accept, from {', '.join(REFUSING)}"
        )
    return names
