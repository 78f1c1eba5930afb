"""The data the conformance suite feeds adapters, and how it is shown in failure messages.

Hypothesis generates these values; when a clause fails, the minimal example is
printed with :func:`describe_example`, which abbreviates long strings so a
50,000-character episode reads as one line.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SampleEpisode", "abbreviate", "describe_example", "explain_text_difference", "show_ids"]

#: Strings longer than this are shown as head…tail with their length.
SHOWN_CHARS = 60


@dataclass(frozen=True)
class SampleEpisode:
    """One episode as the suite ingests it: ``ingest(episode_id, scope_id, timestamp, text, meta)``."""

    episode_id: str
    timestamp: str
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """``id='e1' timestamp='2020-01-01T00:00:00' text='…' meta={...}`` with long values abbreviated."""
        meta = f" meta={abbreviate(dict(self.meta))}" if self.meta else ""
        return f"id={abbreviate(self.episode_id)} timestamp={abbreviate(self.timestamp)} text={abbreviate(self.text)}{meta}"


def abbreviate(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, with strings longer than ``limit`` shown as ``'head…tail' (N chars)``."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        head, tail = value[: limit * 2 // 3], value[-(limit // 3) :]
        return f"{repr(head)[:-1]}…{repr(tail)[1:]} ({len(value):,} chars)"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{abbreviate(k, limit)}: {abbreviate(v, limit)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):  # tuples too, as lists: "('a')" would read like a string
        inner = ", ".join(abbreviate(item, limit) for item in value[:12])
        more = f", … ({len(value)} items)" if len(value) > 12 else ""
        return "[" + inner + more + "]"
    if isinstance(value, SampleEpisode):
        return value.describe()
    return repr(value)


def show_ids(ids: Sequence[str]) -> str:
    """A list of ref ids, abbreviated: ``['e1', 'e2', … (40 items)]``."""
    return abbreviate(list(ids), limit=40)


def describe_example(example: Any) -> list[str]:
    """One line per field of a generated example (a dataclass); episodes get a line each."""
    if not dataclasses.is_dataclass(example) or isinstance(example, type):
        return [abbreviate(example)]
    lines: list[str] = []
    for item in dataclasses.fields(example):
        value = getattr(example, item.name)
        if isinstance(value, tuple | list) and value and all(isinstance(v, SampleEpisode) for v in value):
            lines.append(f"{item.name}: {len(value)} episode(s), ingested in this order")
            lines.extend(f"  [{index}] {episode.describe()}" for index, episode in enumerate(value, start=1))
        elif isinstance(value, SampleEpisode):
            lines.append(f"{item.name}: {value.describe()}")
        else:
            lines.append(f"{item.name}: {abbreviate(value)}")
    return lines


def explain_text_difference(expected: str, got: str) -> str:
    """How ``got`` differs from ``expected``, with a hint when the change has a common cause."""
    index = next((i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), min(len(expected), len(got)))
    returned = abbreviate(got[index : index + 20]) if index < len(got) else "end of text"
    where = f"they differ from character {index:,}: ingested {abbreviate(expected[index : index + 20])}, returned {returned}"
    hints = []
    if expected.startswith(got):
        hints.append("the returned text is a truncated prefix")
    elif got == expected.strip():
        hints.append("surrounding whitespace was stripped")
    elif got in (unicodedata.normalize(form, expected) for form in ("NFC", "NFD", "NFKC", "NFKD")):
        hints.append("the text was Unicode-normalised")
    elif got.lower() == expected.lower():
        hints.append("letter case changed")
    elif "\ufffd" in got or (got.count("?") > expected.count("?")):
        hints.append("characters were lost in an encoding round trip")
    hint = f" ({'; '.join(hints)})" if hints else ""
    return f"{len(got):,} characters returned, {len(expected):,} ingested; {where}{hint}"
