"""Choosing questions of a saved run: by id, by a ``-k`` keyword expression, or the worst ones.

The ``-k`` grammar is pytest's: names joined with ``and``, ``or``, ``not`` and parentheses, each name
matching when it is a case-insensitive substring of a question's test id, type, category, suite,
budget or outcome (``-k "hybrid and temporal and not ok"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pytest_lens.reports.views.transcript import Transcript

__all__ = ["KeywordError", "keyword_matcher", "match_question", "select"]

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([\w:+\-.\[\]\\/@]+))")
_OPERATORS = ("and", "or", "not")


class KeywordError(ValueError):
    """A ``-k`` expression that does not parse; the message says where."""


@dataclass
class _Parser:
    tokens: list[tuple[str, int]]
    position: int = 0

    def peek(self) -> str | None:
        return self.tokens[self.position][0] if self.position < len(self.tokens) else None

    def take(self) -> tuple[str, int]:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def expression(self) -> Callable[[str], bool]:
        left = self.conjunction()
        while self.peek() == "or":
            self.take()
            right = self.conjunction()
            left = (lambda a, b: lambda names: a(names) or b(names))(left, right)
        return left

    def conjunction(self) -> Callable[[str], bool]:
        left = self.negation()
        while self.peek() == "and":
            self.take()
            right = self.negation()
            left = (lambda a, b: lambda names: a(names) and b(names))(left, right)
        return left

    def negation(self) -> Callable[[str], bool]:
        if self.peek() == "not":
            self.take()
            inner = self.negation()
            return lambda names: not inner(names)
        return self.primary()

    def primary(self) -> Callable[[str], bool]:
        if self.peek() is None:
            raise KeywordError("the expression ends where a name or '(' was expected")
        token, column = self.take()
        if token == "(":
            inner = self.expression()
            if self.peek() != ")":
                raise KeywordError(f"'(' at column {column + 1} is never closed")
            self.take()
            return inner
        if token == ")" or token in _OPERATORS:
            raise KeywordError(f"unexpected {token!r} at column {column + 1}; expected a name or '('")
        needle = token.lower()
        return lambda names: needle in names


def keyword_matcher(expression: str) -> Callable[[Iterable[str]], bool]:
    """A predicate over a question's names for a pytest-style ``-k`` expression; :class:`KeywordError` if malformed."""
    tokens: list[tuple[str, int]] = []
    position = 0
    text = expression.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            rest = text[position:]
            column = position + len(rest) - len(rest.lstrip()) + 1
            raise KeywordError(f"unexpected character {rest.lstrip()[:1]!r} at column {column}")
        token = match.group(1) or match.group(2) or match.group(3)
        tokens.append((token, match.start(match.lastindex or 0)))
        position = match.end()
    if not tokens:
        raise KeywordError("the expression is empty")
    parser = _Parser(tokens)
    predicate = parser.expression()
    if parser.peek() is not None:
        token, column = parser.take()
        raise KeywordError(f"unexpected {token!r} at column {column + 1}")

    def matches(names: Iterable[str]) -> bool:
        return predicate("\n".join(name.lower() for name in names))

    return matches


def _names(transcript: Transcript) -> list[str]:
    r = transcript.result
    return [transcript.test_id, r.question_type, r.category, r.suite, r.budget, transcript.outcome]


def match_question(transcript: Transcript, wanted: str) -> bool:
    """``wanted`` names this question: its question id, its test id, or its pytest node id (``...test_lens[ID]``)."""
    inner = wanted.rpartition("[")[2].removesuffix("]") if wanted.endswith("]") else wanted
    return inner in (transcript.result.question_id, transcript.test_id)


def select(items: Sequence[Transcript], question: str | None = None, keyword: str | None = None) -> list[Transcript]:
    """The transcripts naming ``question`` and matching the ``keyword`` expression (both optional)."""
    matcher = keyword_matcher(keyword) if keyword else None
    return [item for item in items if (question is None or match_question(item, question)) and (matcher is None or matcher(_names(item)))]
