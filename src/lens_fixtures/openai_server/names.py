"""The named things of a record's line, as the scripted extractors see them (one home for the three systems that extract them).

A named thing is a hyphenated identifier (``service-b``, ``FR-3``), a capitalised word with a capital or digit inside
(``ZX7Q``, ``GeoLookup``), capitalised words in a row (``North Station``), or a lower-case identifier with digits
between letters (``kqv7zt``, the conformance suite's rare tokens): what a perfect extractor keeps of a record.
Cognee's knowledge graph also keeps numbers with their unit (``9.8 mm/s``) as nodes.
"""

from __future__ import annotations

import re

__all__ = ["named_things"]

_NAMED = (
    r"\b[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+\b|\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b|\b[A-Z][a-z]+(?: [A-Z][a-z]+)+\b"
    r"|\b[a-z]+[0-9]+[a-z][a-z0-9]*\b"
)
_PLAIN = re.compile(_NAMED)
_WITH_UNITS = re.compile(_NAMED + r"|\b\d+(?:\.\d+)? ?(?:mm/s|ms|cm|km|%|s|h)\b")


def named_things(line: str, *, units: bool = False) -> list[str]:
    """The line's named things in order, each once; ``units``: numbers with their unit too."""
    pattern = _WITH_UNITS if units else _PLAIN
    return list(dict.fromkeys(match.group(0) for match in pattern.finditer(line)))
